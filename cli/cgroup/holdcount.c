/* What the hook (hook.c) refused of the app's own setsockopt: its count map read, by the
 * wrapper that holds it (cg_progs_count, said by cg_progs_tell every tick) or by its id
 * (cg_hook_counts_of: socktune detach, for attach --cgroup's), and the options it holds as
 * the record names them. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "cgroup/cgroup.h"
#include "record.h"

/* The count map's value: one per held option and end (key 2 * k + end, k an index of
 * held[], end 0 accepted, 1 outgoing) */

/* A slot as the wrapper and detach read it (the one conversion of both) */
static void override_of(const struct cg_override_slot *s, struct cg_override *o)
{
	memset(o, 0, sizeof *o);
	o->count = s->count;
	o->last = (long long)s->last; /* (SO_MAX_PACING_RATE's ~0, no limit, reads -1) */
	memcpy(o->name, s->name, sizeof o->name - 1);
}

int cg_progs_count(const struct cg_progs *g, int k, int end, struct cg_override *o)
{
	struct cg_override_slot s;
	uint32_t key = (uint32_t)(2 * k + end);
	memset(o, 0, sizeof *o);
	if (g->count_fd < 0 || k >= g->nheld || cg_map_lookup(g->count_fd, &key, &s) != 0)
		return -1;
	override_of(&s, o);
	return 0;
}

/* One line: what the hook refused of option i on end, so far. */
static void say(const struct st_policy *p, int i, int end, const struct cg_override *o,
                const char *dir, int first)
{
	struct rec *r = rec_new();
	if (!r)
		return;
	int want = 0;
	char key[ST_KEY_MAX], app[sizeof o->name];
	st_opt_want(p, i, &want);
	rec_int(r, K_PID, (long long)getpid());
	rec_str(r, K_LEVEL, "info");
	rec_str(r, K_EVENT, "app-override");
	rec_str(r, K_CGROUP, dir);
	rec_str(r, K_LOG_SOCKET, end ? "client" : "accepted");
	rec_str(r, K_CHK_OPTION, st_opt_key(i, key, sizeof key));
	if (st_sockopts[i].flags & ST_O_NAME) {
		size_t m = 0; /* (the app's bytes: printable ones only) */
		for (; m + 1 < sizeof app && o->name[m]; m++)
			app[m] = o->name[m] > 0x20 && o->name[m] < 0x7f ? o->name[m] : '?';
		app[m] = '\0';
		rec_str(r, K_LOG_APP_NAME, app);
		rec_str(r, K_CHK_WANT_NAME, st_opt_name(p, i));
	} else {
		rec_int(r, K_LOG_APP_VALUE, o->last);
		rec_int(r, K_CHK_WANT_VALUE, (st_sockopts[i].flags & ST_O_UNSIGNED)
		                                  ? (long long)(unsigned)want : want);
	}
	rec_int(r, K_CONN_COUNT, (long long)o->count);
	if (first)
		rec_bool(r, K_LOG_FIRST, 1);
	rec_str(r, K_LOG_ACTION, "refused");
	fputs("socktune ", stderr);
	rec_write_logfmt(stderr, r);
	fputc('\n', stderr);
	rec_free(r);
}

void cg_progs_tell(const struct cg_progs *g, const struct st_policy *p, int client,
                   const char *dir, unsigned long long said[][2], int final)
{
	for (int k = 0; k < g->nheld; k++) {
		int ends = cg_hold_ends(p, client, g->held[k]);
		for (int end = 0; end < 2; end++) {
			struct cg_override o;
			if (!(ends & (1 << end)) || cg_progs_count(g, k, end, &o) != 0 || !o.count)
				continue;
			if (!said[k][end] || final)
				say(p, g->held[k], end, &o, dir, !said[k][end]);
			said[k][end] = o.count;
		}
	}
}

int cg_hook_counts_of(unsigned hook_id, struct cg_override *c, int max)
{
	struct st_bpf_get_id g = {.id = hook_id};
	int fd = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &g, sizeof g), n = -1;
	if (fd < 0)
		return -1;
	uint32_t ids[8];
	struct st_bpf_prog_info info;
	memset(&info, 0, sizeof info);
	info.nr_map_ids = 8;
	info.map_ids = (uintptr_t)ids;
	struct st_bpf_info_by_fd a = {.bpf_fd = (uint32_t)fd, .info_len = sizeof info,
	                              .info = (uintptr_t)&info};
	int r = (int)cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a);
	close(fd);
	for (uint32_t m = 0; r == 0 && m < info.nr_map_ids && m < 8 && n < 0; m++) {
		struct st_bpf_get_id mg = {.id = ids[m]};
		int mfd = (int)cg_bpf(ST_BPF_MAP_GET_FD_BY_ID, &mg, sizeof mg);
		if (mfd < 0)
			continue;
		struct st_bpf_map_info mi;
		memset(&mi, 0, sizeof mi);
		struct st_bpf_info_by_fd ma = {.bpf_fd = (uint32_t)mfd, .info_len = sizeof mi,
		                               .info = (uintptr_t)&mi};
		/* the count map: the array of slots (the other is the marks' socket storage) */
		if (cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &ma, sizeof ma) == 0 &&
		    mi.type == ST_BPF_MAP_TYPE_ARRAY && mi.value_size == sizeof(struct cg_override_slot)) {
			n = 0;
			for (uint32_t key = 0; key < mi.max_entries && n < max; key++) {
				struct cg_override_slot s;
				memset(&c[n], 0, sizeof c[n]);
				if (cg_map_lookup(mfd, &key, &s) == 0)
					override_of(&s, &c[n]);
				n++;
			}
		}
		close(mfd);
	}
	return n;
}

void cg_progs_held_keys(const struct cg_progs *g, char *out, size_t n)
{
	out[0] = '\0';
	for (int k = 0; k < g->nheld && g->hook_fd >= 0; k++) {
		char key[ST_KEY_MAX];
		size_t l = strlen(out);
		snprintf(out + l, n - l, "%s%s", l ? " " : "", st_opt_key(g->held[k], key, sizeof key));
	}
}
