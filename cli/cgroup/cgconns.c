/* attach --cgroup --connections: the connections already open on the target's listeners in
 * the cgroup.  A sock_ops program acts on a connection at its callbacks (established, ...),
 * so one attached after a connection was made never tunes it; the TCP iterator reaches it
 * instead, once, by its sock_diag cookie, with what the program sets on an accepted
 * connection and an open one still takes (the table's iterator column: not the initial
 * windows, not the SYN's RTO).  One run of it in the target's network namespace, its ids
 * said; nothing stays loaded.  Each connection said a line as attach says one (via=bpf). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "host/clock.h"
#include "host/diag.h"
#include "host/itertune.h"
#include "host/pidinfo.h"
#include "record.h"
#include "via.h"

/* one line, on stdout (info) or stderr (warn), or a member of doc's array arr (--json) */
static struct rec *line(struct rec *arr, const char *level, const char *event)
{
	struct rec *r = arr ? rec_obj(arr, 0) : rec_new();
	if (!arr) {
		rec_int(r, K_PID, (long long)getpid());
		rec_str(r, K_LEVEL, level);
	}
	rec_str(r, K_EVENT, event);
	return r;
}

static void line_end(struct rec *arr, struct rec *r, FILE *f)
{
	if (arr)
		return;
	rec_say(f, "socktune ", r);
	rec_free(r);
}

/* option i that the iterator cannot set on an open connection, said once */
static void not_open(struct rec *warnings, const struct cg_where *w, int i)
{
	char why[400];
	struct rec *r = line(warnings, "warn", "refused");
	rec_str(r, K_CGROUP, w->dir);
	rec_str(r, K_CHK_OPTION, st_vars[st_sockopts[i].var].option);
	snprintf(why, sizeof why, "not on the %d connection%s open there (the program attached sets "
	         "it on the cgroup's next ones): %s", w->nconns, w->nconns == 1 ? "" : "s",
	         st_iter_why(i));
	rec_str(r, K_ERROR, why);
	line_end(warnings, r, stderr);
}

int cg_conns_apply(const char *target, const struct cg_where *w, const struct st_policy *p,
                   struct rec *doc, char *err, size_t n)
{
	struct rec *socks = doc ? rec_arr(doc, K_SOCKETS) : NULL;
	struct rec *warnings = doc ? rec_arr(doc, K_WARNINGS) : NULL;
	int opts[IT_OPTS], wants[IT_OPTS], nopt = 0, refused = 0;
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		long long want;
		if (!st_sockops_sets(p, i, 0, &want))
			continue;
		if (st_iter_how(i) == ST_ITER_NONE || nopt == IT_OPTS) {
			if (w->nconns) /* (said; not a failure: the program sets it, where it can) */
				not_open(warnings, w, i);
			continue;
		}
		opts[nopt] = i;
		wants[nopt++] = (int)want;
	}
	if (!w->nconns || !nopt)
		return refused;
	char why[400], name[64];
	if (!it_usable(why, sizeof why)) {
		snprintf(err, n, "the %d connections open there keep their values: the TCP iterator "
		         "cannot be used here: %s", w->nconns, why);
		return refused + 1;
	}
	struct target t;
	parse_target(target, TARGET_PID | TARGET_PORT, &t);
	int fd = -1;
	snprintf(name, sizeof name, "this process's");
	if (t.kind == TARGET_PID && pid_same_ns(t.pid, "net") != 1) {
		snprintf(name, sizeof name, "/proc/%d/ns/net", t.pid);
		if ((fd = open(name, O_RDONLY | O_CLOEXEC)) < 0) {
			snprintf(err, n, "the %d connections open there keep their values: %s: %s",
			         w->nconns, name, strerror(errno));
			return refused + 1;
		}
	}
	struct it_sock *its = calloc((size_t)w->nconns, sizeof *its);
	if (!its) {
		snprintf(err, n, "%s", strerror(ENOMEM));
		if (fd >= 0)
			close(fd);
		return refused + 1;
	}
	for (int k = 0; k < w->nconns; k++) {
		its[k].cookie = w->conns[k].cookie;
		its[k].family = w->conns[k].family;
		for (int j = 0; j < nopt; j++)
			it_add(&its[k], opts[j], wants[j]);
	}
	struct bi_run run;
	double t0 = clock_mono_s();
	char ierr[600] = "";
	int rc = it_run(fd, its, w->nconns, IT_SET, &run, ierr, sizeof ierr);
	via_say_run(stderr, "attach --cgroup", name, &run, w->nconns,
	            1000 * (clock_mono_s() - t0), rc, ierr);
	if (fd >= 0)
		close(fd);
	if (rc != 0) {
		snprintf(err, n, "the %d connections open there keep their values: the TCP iterator: %s",
		         w->nconns, ierr);
		free(its);
		return refused + 1;
	}
	for (int k = 0; k < w->nconns; k++) {
		const struct cg_conn *c = &w->conns[k];
		char addr[64], peer[64], e[200];
		if (!its[k].visited)
			continue; /* (closed since it was seen) */
		diag_addr(c->family, c->src, c->sport, addr, sizeof addr);
		diag_addr(c->family, c->dst, c->dport, peer, sizeof peer);
		struct rec *r = line(socks, "info", "attach-connection");
		rec_str(r, K_ADDR, addr);
		rec_str(r, K_PEER, peer);
		rec_str(r, K_VIA, "bpf");
		rec_int(r, K_COOKIE, (long long)c->cookie);
		rec_int(r, K_CGROUP_ID, (long long)w->id);
		for (int j = 0; j < its[k].n; j++) {
			const struct st_outcome *o = &its[k].out[j];
			if (o->state == ST_SET)
				rec_outcome(r, p, its[k].opt[j], o, "");
			if (o->state != ST_FAILED)
				continue;
			refused++;
			struct rec *x = line(warnings, "warn", "refused");
			rec_str(x, K_ADDR, addr);
			rec_str(x, K_PEER, peer);
			rec_int(x, K_COOKIE, (long long)c->cookie);
			rec_str(x, K_CHK_OPTION, ST_KEY(its[k].opt[j]));
			snprintf(e, sizeof e, "bpf_setsockopt %s: %s", st_sockopts[its[k].opt[j]].label
			         ? st_sockopts[its[k].opt[j]].label : ST_KEY(its[k].opt[j]),
			         strerror(o->err));
			rec_str(x, K_ERROR, e);
			line_end(warnings, x, stderr);
		}
		line_end(socks, r, stdout);
	}
	free(its);
	return refused;
}
