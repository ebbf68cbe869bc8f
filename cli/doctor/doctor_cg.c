/* The sock_ops programs on the cgroups of the listeners' processes: the cgroup each process
 * is in (/proc/PID/cgroup under the v2 mount), the programs attached there (BPF_PROG_QUERY),
 * each by id and name, and for socktune's own what it sets, as the kernel holds it
 * (cli/host/bpfread.c); where that cannot be read the record says why and shows none. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "host/bpfhost.h"
#include "doctor/doctor.h"
#include "host/hostinfo.h"

#define MAX_CGROUPS 8
#define MAX_PROGS 16

struct cg_look {
	char dir[4096];
	int pid;
	int nprogs;
	struct cg_seen prog[MAX_PROGS];
	char error[256];
};

static struct cg_look looks[MAX_CGROUPS];
static int nlooks = -1; /* (read once: text and JSON show the same) */

static void look_one(struct cg_look *c, long long hz)
{
	unsigned ids[MAX_PROGS];
	int fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(c->error, sizeof c->error, "open: %s", strerror(errno));
		return;
	}
	int n = cg_query(fd, ids, MAX_PROGS);
	int e = errno;
	close(fd);
	if (n < 0) {
		snprintf(c->error, sizeof c->error, "BPF_PROG_QUERY: %s%s", strerror(e),
		         e == EPERM ? " (it needs CAP_NET_ADMIN: run doctor as root)" : "");
		return;
	}
	for (int k = 0; k < n && k < MAX_PROGS; k++) {
		struct cg_seen *s = &c->prog[c->nprogs];
		if (cg_prog_look(ids[k], hz, s) != 0) {
			if (errno == ENOENT)
				continue; /* (detached and gone meanwhile) */
			memset(s, 0, sizeof *s);
			s->id = ids[k];
			int pe = errno;
			snprintf(s->why, sizeof s->why, "BPF_PROG_GET_FD_BY_ID: %s%s", strerror(pe),
			         pe == EPERM ? " (it needs CAP_SYS_ADMIN: whose it is and what it sets "
			                       "are not known)" : "");
		}
		c->nprogs++;
	}
}

/* The cgroups of d's listeners' processes (the service's holder of each), each once. */
static int read_looks(const struct shared_window *d)
{
	if (nlooks >= 0)
		return nlooks;
	int n = 0;
	static struct host h; /* (the jiffy, for a SYN RTO given in jiffies) */
	static int have_host;
	if (!have_host) {
		read_host(&h);
		have_host = 1;
	}
	long long hz = h.hz;
	for (int l = 0; l < d->nl && n < MAX_CGROUPS; l++) {
		const struct doc_listener *L = &d->l[l];
		if (L->service < 0)
			continue;
		char dir[4096], err[256];
		int pid = L->owners[L->service].pid;
		if (cg_pid_dir(pid, dir, sizeof dir, err, sizeof err) != 0)
			continue; /* (no cgroup v2: nothing to list) */
		int seen = 0;
		for (int k = 0; k < n && !seen; k++)
			seen = strcmp(looks[k].dir, dir) == 0;
		if (seen)
			continue;
		struct cg_look *c = &looks[n++];
		memset(c, 0, sizeof *c);
		snprintf(c->dir, sizeof c->dir, "%s", dir);
		c->pid = pid;
		look_one(c, hz);
	}
	return nlooks = n;
}

static void policy_rec(struct rec *r, const struct cg_seen *s)
{
	for (int i = 0; i < ST_O_COUNT; i++) {
		if (!s->set[i])
			continue;
		int k = K_OPTION + i;
		if (st_is_sockopt(i) && (st_sockopts[i].flags & ST_O_NAME)) {
			rec_str(r, k, s->text[i]);
		} else if (rec_key_type(k) == REC_GROUP) {
			struct rec *g = rec_group(r, k);
			rec_known(g, K_WANT, s->value[i]);
		} else if (rec_key_type(k) == REC_BOOL) {
			rec_bool(r, k, s->value[i] != 0);
		} else {
			rec_int(r, k, s->value[i]);
		}
	}
}

void doc_cgroups_rec(struct rec *root, const struct shared_window *d)
{
	int n = read_looks(d);
	struct rec *a = rec_arr(root, K_SOCKOPS_CGROUPS);
	for (int k = 0; k < n; k++) {
		const struct cg_look *c = &looks[k];
		struct rec *o = rec_obj(a, 0);
		rec_str(o, K_CGROUP, c->dir);
		rec_int(o, K_PID, c->pid);
		rec_str(o, K_ERROR, c->error[0] ? c->error : NULL);
		struct rec *ps = rec_arr(o, K_PROGRAMS);
		for (int j = 0; j < c->nprogs; j++) {
			const struct cg_seen *s = &c->prog[j];
			struct rec *p = rec_obj(ps, 0);
			rec_int(p, K_PROG_ID, s->id);
			rec_str(p, K_PROG_NAME, s->name[0] ? s->name : NULL);
			if (!s->name[0] && s->why[0]) { /* (not seen at all: whose, unknown) */
				rec_null(p, K_PROG_OURS);
				rec_str(p, K_ERROR, s->why);
				continue;
			}
			rec_bool(p, K_PROG_OURS, s->ours);
			if (!s->ours)
				continue;
			if (s->readable) {
				rec_int(p, K_INSNS, s->insns);
				policy_rec(rec_obj(p, K_POLICY), s);
			} else {
				rec_null(p, K_POLICY);
			}
			rec_str(p, K_ERROR, s->why[0] ? s->why : NULL);
		}
	}
}

void doc_cgroups_text(FILE *f, const struct shared_window *d)
{
	int n = read_looks(d);
	if (!n)
		return;
	fprintf(f, "\nsock_ops programs on the listeners' cgroups:\n");
	for (int k = 0; k < n; k++) {
		const struct cg_look *c = &looks[k];
		fprintf(f, "  %s (pid %d): ", c->dir, c->pid);
		if (c->error[0]) {
			fprintf(f, "not read: %s\n", c->error);
			continue;
		}
		fprintf(f, "%d program%s\n", c->nprogs, c->nprogs == 1 ? "" : "s");
		for (int j = 0; j < c->nprogs; j++) {
			const struct cg_seen *s = &c->prog[j];
			fprintf(f, "    id %u %s", s->id, s->name[0] ? s->name : "(no name)");
			if (!s->ours) {
				fprintf(f, "%s%s%s\n", strcmp(s->name, CG_PROG_NAME) == 0 ? " (not on socktune's "
				        "record: another party's)" : "", s->why[0] ? ": " : "", s->why);
				continue;
			}
			if (!s->readable) {
				fprintf(f, " (socktune's, by %s): policy not readable: %s\n", s->owner, s->why);
				continue;
			}
			fprintf(f, " (socktune's, by %s, %d instructions): sets", s->owner, s->insns);
			struct rec *r = rec_new();
			if (r) {
				policy_rec(r, s);
				fputc(' ', f);
				rec_write_logfmt(f, r);
				rec_free(r);
			}
			fprintf(f, "\n");
		}
	}
}

int doc_cgroup_sets(const struct shared_window *d, int l, int *initcwnd, char *cong, size_t n)
{
	const struct doc_listener *L = &d->l[l];
	*initcwnd = 0;
	cong[0] = '\0';
	char dir[4096], err[256];
	if (L->service < 0 || cg_pid_dir(L->owners[L->service].pid, dir, sizeof dir, err,
	                                  sizeof err) != 0)
		return -1;
	int looks_n = read_looks(d), found = -1;
	for (int k = 0; k < looks_n; k++) {
		const struct cg_look *c = &looks[k];
		if (strcmp(c->dir, dir) != 0)
			continue;
		for (int j = 0; j < c->nprogs; j++) {
			const struct cg_seen *s = &c->prog[j];
			if (!s->ours || !s->readable)
				continue;
			found = 0;
			if (s->set[ST_V_INITCWND])
				*initcwnd = (int)s->value[ST_V_INITCWND];
			if (s->set[ST_V_CONGESTION])
				snprintf(cong, n, "%s", s->text[ST_V_CONGESTION]);
		}
	}
	return found;
}
