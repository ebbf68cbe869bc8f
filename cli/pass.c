/* The wrappers' listener pass: each new listener of the wrapper's family (its program and
 * what that starts or leaves) tuned from outside (attach.c), one sock_diag dump of the
 * listeners a pass, descriptors read only when a listener is new.  The attach mode
 * (socktune --attach, supervise.c) runs it for its whole policy; the cgroup mode
 * (socktune --cgroup, cgroup/run.c) for the backlog alone, which is listen()'s argument and
 * out of a sock_ops program's reach.  The lines go to stderr (stdout is the program's),
 * each pass's in one write that waits at most 100 ms for room. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socktune.h"
#include "attach/attach.h"
#include "host/clock.h"

/* The network namespaces the family's processes are in besides ours (`ip netns exec NS
 * server`, a worker started so): one service each, its own sock_diag socket, opened when a
 * process of the family is first seen there and closed once none is (the socket would keep
 * the namespace, and its interfaces, alive).  Looked for at the first pass, at each pass
 * where the program's own namespace changed, and by a walk of the family every 500 ms, or
 * 100 times what the last walk took when that is longer (2,000 processes: ~40 ms a walk),
 * so that the walks keep to about 1% of a core. */
#define NS_WALK_NS (500 * 1000 * 1000LL)
struct netns_svc {
	unsigned long long ns;
	struct service svc;
	int seen;
};
struct netns_set {
	unsigned long long ours, program; /* the program's, at the last look */
	long long next_walk;              /* (CLOCK_MONOTONIC, ns) */
	struct netns_svc *v;
	size_t n;
};

struct attach_pass {
	const char *mode;        /* "--attach", "--cgroup": how its lines name the wrapper */
	struct st_policy policy; /* what the pass sets */
	struct attach_state t;
	struct service svc;      /* the family in our network namespace */
	struct netns_set others;
	FILE *lines;             /* a memstream, or NULL (then stderr) */
	char *said;
	size_t saidlen;
};

static void find_namespaces(struct attach_pass *ap)
{
	struct netns_set *set = &ap->others;
	struct svc_pids family = {0};
	svc_descendants(getpid(), 0, &family);
	for (size_t k = 0; k < set->n; k++)
		set->v[k].seen = 0;
	for (size_t k = 0; k < family.n; k++) {
		unsigned long long ns = netns_of(family.v[k]);
		size_t j = 0;
		while (j < set->n && set->v[j].ns != ns)
			j++;
		if (!ns || ns == set->ours || (j < set->n && set->v[j].seen++))
			continue;
		if (j < set->n) { /* a process there to look through, should netpid have gone */
			set->v[j].svc.netpid = family.v[k];
			continue;
		}
		struct netns_svc *v = realloc(set->v, (set->n + 1) * sizeof *v);
		if (!v)
			break;
		set->v = v;
		char err[200];
		v[set->n] = (struct netns_svc){.ns = ns, .seen = 1};
		if (svc_open_in(&v[set->n].svc, SVC_FAMILY, getpid(), family.v[k], 0, err, sizeof err) != 0)
			fprintf(ap->t.err, "socktune: %s: pid %d, in network namespace net:[%llu]: %s: its "
			        "listeners there are not tuned\n", ap->mode, family.v[k], ns, err);
		set->n++;
	}
	for (size_t k = 0; k < set->n;)
		if (!set->v[k].seen) {
			svc_close(&set->v[k].svc);
			set->v[k] = set->v[--set->n];
		} else {
			k++;
		}
	free(family.v);
}

struct attach_pass *attach_pass_open(const struct st_policy *p, const char *mode, int backlog_only)
{
	struct attach_pass *ap = calloc(1, sizeof *ap);
	if (!ap)
		return NULL;
	ap->mode = mode;
	ap->policy = *p;
	if (backlog_only) /* the backlog, and which listeners (--ports): nothing else is set */
		ap->policy.set &= 1ull << ST_V_BACKLOG | 1ull << ST_V_BACKLOG_MIN |
		                  1ull << ST_V_BACKLOG_MAX | 1ull << ST_V_PORTS;
	ap->lines = open_memstream(&ap->said, &ap->saidlen);
	FILE *to = ap->lines ? ap->lines : stderr;
	ap->t = (struct attach_state){.p = &ap->policy, .out = to, .err = to, .wrapper = 1,
	                             .via = VIA_PIDFD};
	char err[200];
	if (svc_open(&ap->svc, SVC_FAMILY, getpid(), 0, err, sizeof err) != 0)
		fprintf(to, "socktune: %s: %s: its listeners are not tuned\n", mode, err);
	ap->others.ours = ap->others.program = netns_of(0);
	return ap;
}

FILE *attach_pass_say(struct attach_pass *ap)
{
	return ap->t.err;
}

void attach_pass_flush(struct attach_pass *ap)
{
	/* a stderr nobody reads must not stop the wrapper's signals and reaping: as the
	 * library's log, lines that find no room in 100 ms are dropped */
	if (!ap->lines || fflush(ap->lines) != 0 || !ap->saidlen)
		return;
	struct pollfd pf = {.fd = STDERR_FILENO, .events = POLLOUT};
	if (poll(&pf, 1, 100) == 1 && (pf.revents & POLLOUT) &&
	    write(STDERR_FILENO, ap->said, ap->saidlen) < 0)
		ap->saidlen = 0; /* (dropped, as a line that found no room) */
	rewind(ap->lines);
}

void attach_pass_run(struct attach_pass *ap, int child)
{
	struct netns_set *set = &ap->others;
	if (ap->svc.nl >= 0 || ap->svc.how[0])
		attach_look(&ap->t, &ap->svc);
	unsigned long long program = netns_of(child);
	long long start = clock_mono_ns();
	if (start >= set->next_walk || program != set->program) {
		find_namespaces(ap);
		long long took = clock_mono_ns() - start;
		set->next_walk = clock_mono_ns() + (100 * took > NS_WALK_NS ? 100 * took : NS_WALK_NS);
	}
	set->program = program;
	for (size_t k = 0; k < set->n; k++)
		if (set->v[k].svc.nl >= 0 || set->v[k].svc.how[0])
			attach_look(&ap->t, &set->v[k].svc);
	attach_pass_flush(ap);
}

void attach_pass_close(struct attach_pass *ap)
{
	if (!ap)
		return;
	attach_pass_flush(ap);
	svc_close(&ap->svc);
	for (size_t k = 0; k < ap->others.n; k++)
		svc_close(&ap->others.v[k].svc);
	free(ap->others.v);
	while (ap->t.npidfds)
		attach_pidfd_drop(&ap->t, ap->t.pidfds[ap->t.npidfds - 1].pid);
	free(ap->t.pidfds);
	free(ap->t.said.v);
	if (ap->lines)
		fclose(ap->lines);
	free(ap->said);
	free(ap);
}
