/* How a finding is written: its fixes, each a command that runs as printed (the wrapper's
 * flags for the next start, socktune attach for the running service, a sysctl or an ip
 * route), and its note, the prose around them: why a fix is missing, what one costs.
 * Where no runnable command can be known, the note says so instead of printing one. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "socktune_host.h"
#include "socktune_opts.h"
#include "cli.h"
#include "findings/window.h"
#include "findings/findings.h"
#include "host/inspect.h"

double doc_share(uint64_t part, uint64_t busy)
{
	return busy ? 100.0 * (double)part / (double)busy : -1;
}

struct doc_finding *doc_add(struct doc_findings *fs, int rule, enum doc_severity sev,
                            const char *certainty, const struct shared_window *d, int l)
{
	if (fs->n == DOC_MAX_FINDINGS) {
		fs->dropped++;
		return NULL;
	}
	struct doc_finding *f = &fs->f[fs->n++];
	memset(f, 0, sizeof *f);
	f->evidence = rec_new(); /* (out of memory: the evidence says so when written) */
	f->rule = rule; /* (its kind: doc_judge_all names it from the table) */
	f->severity = sev;
	f->certainty = certainty;
	f->listener = l;
	if (l >= 0) {
		const struct doc_listener *L = &d->l[l];
		f->port = L->port;
		f->pid = L->service >= 0 ? L->owners[L->service].pid : 0;
	}
	return f;
}

/* A command cut at the buffer's end would run as something else: such a fix is left out,
 * and said. */
void doc_fix(struct doc_finding *f, const char *fmt, ...)
{
	if (f->nfix == DOC_MAX_FIXES)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(f->fix[f->nfix], sizeof f->fix[0], fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= sizeof f->fix[0])
		doc_note(f, "a fix too long to show (%d bytes) is left out", w);
	else
		f->nfix++;
}

/* Sentences, "; " between them, each once */
void doc_note(struct doc_finding *f, const char *fmt, ...)
{
	char s[sizeof f->note];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s, sizeof s, fmt, ap);
	va_end(ap);
	if (!strstr(f->note, s))
		doc_say(f->note, sizeof f->note, "%s%s", f->note[0] ? "; " : "", s);
}

void doc_in_ns(const struct shared_window *d, int l, char *out, size_t n)
{
	const struct doc_ns *ns = &d->ns[d->l[l].ns];
	out[0] = '\0';
	if (!ns->ours)
		snprintf(out, n, "nsenter --net=/proc/%d/ns/net ", ns->pid);
}

void doc_counter(struct doc_finding *f, const struct doc_ns *ns, int k)
{
	rec_known(f->evidence, DOC_COUNTER_KEY(k), doc_ns_delta(ns, k));
}

/* pid appended to a comma-separated list of at most max, unless it is there; 0 when the
 * list was full */
static int list_add(int *list, int *n, int max, int pid)
{
	for (int k = 0; k < *n; k++)
		if (list[k] == pid)
			return 1;
	if (*n == max)
		return 0;
	list[(*n)++] = pid;
	return 1;
}

/* The pids holding listener l's connections (at the window's end), the service's first;
 * how many connections' holders did not fit */
static int conn_holders(const struct shared_window *d, int l, int *list, int *n)
{
	int left = 0;
	for (size_t k = 0; k < d->nc; k++)
		if (d->c[k].listener == l && d->c[k].pid > 0)
			left += !list_add(list, n, DOC_FIX_PIDS, d->c[k].pid);
	return left;
}

void doc_listener_evidence(struct doc_finding *f, const struct shared_window *d, int l)
{
	const struct doc_listener *L = &d->l[l];
	char addr[64];
	diag_addr(L->family, L->addr, L->port, addr, sizeof addr);
	rec_str(f->evidence, K_ADDR, addr);
	rec_int(f->evidence, K_PORT, L->port);
	doc_backlog(f->evidence, L);
	if (L->nowners) {
		struct rec *a = rec_arr(f->evidence, K_LISTENER_PIDS);
		for (int o = 0; o < L->nowners; o++)
			rec_int(a, 0, L->owners[o].pid);
		if (L->owners_more)
			rec_int(f->evidence, K_OWNERS_NOT_SHOWN, L->owners_more);
	}
	int pids[DOC_FIX_PIDS], n = 0, more = conn_holders(d, l, pids, &n);
	if (n) {
		struct rec *a = rec_arr(f->evidence, K_CONNECTION_PIDS);
		for (int k = 0; k < n; k++)
			rec_int(a, 0, pids[k]);
		if (more)
			rec_bool(f->evidence, K_CONNECTION_PIDS_INCOMPLETE, 1);
	}
}

void doc_backlog(struct rec *parent, const struct doc_listener *L)
{
	struct rec *g = rec_group(parent, K_BACKLOG);
	rec_known(g, K_APP, L->asked); /* (not known from outside the process: null) */
	rec_int(g, K_EFFECTIVE, L->backlog);
}

void doc_fix_live(struct doc_finding *f, const struct shared_window *d, int l, const char *flags,
                  int connections)
{
	const struct doc_listener *L = &d->l[l];
	if (!L->seen_last) {
		doc_note(f, "now: the listener closed during the window, nothing to attach to");
		return;
	}
	if (L->service < 0) {
		doc_note(f, "now: no process holding the listener was found (another pid namespace, "
		         "or not visible to this user)");
		return;
	}
	/* The service's pid: attach's PID is the service, the processes that hold its listener
	 * and those that hold connections accepted on it (a prefork worker, a backend forked per
	 * connection), so one pid reaches them all, and a fix naming a worker that has since
	 * been replaced does not fail on it.  The evidence names who holds what. */
	doc_fix(f, "socktune attach %s%s --ports %u %d", flags, connections ? " --connections" : "",
	        L->port, L->owners[L->service].pid);
}

static const char *unreached(unsigned reach)
{
	return reach & P_GO ? "a Go program: its socket calls bypass libc"
	       : reach & P_STATIC ? "statically linked"
	       : reach & P_SETID ? "setuid or setgid: the loader drops LD_PRELOAD"
	                         : "file capabilities: the loader drops LD_PRELOAD";
}

void doc_fix_next_start(struct doc_finding *f, const struct shared_window *d, int l,
                        const char *flags)
{
	const struct doc_listener *L = &d->l[l];
	const struct doc_start *s = &L->start;
	if (L->service < 0) {
		doc_note(f, "next start: not known (no process holding the listener was found)");
		return;
	}
	if (!s->known) {
		doc_note(f, "next start: no command shown: %s; put socktune %s -- in front of the "
		         "command that starts it", s->why, flags);
		return;
	}
	/* in the network namespace it runs in: one ip netns named (a namespace of nobody's
	 * making ends with its last process) */
	const struct doc_ns *ns = &d->ns[L->ns];
	char in[300] = "";
	if (!ns->ours && !ns->name[0]) {
		doc_note(f, "next start: no command shown: it runs in network namespace %llu, which "
		         "has no name under /run/netns to start it in again", ns->ino);
		return;
	}
	if (!ns->ours)
		snprintf(in, sizeof in, "ip netns exec %s ", ns->name);
	/* the same port only when it is the program's own: a port the kernel picked (port 0)
	 * is another one at the next start */
	char ports[24] = "";
	if (!st_port_ephemeral(L->port))
		snprintf(ports, sizeof ports, " --ports %u", L->port);
	/* (the variables before ip: it passes its environment on) */
	doc_fix(f, "cd %s && %s%ssocktune %s%s%s -- %s", s->dir, s->env, in,
	        s->reach ? "--attach " : "", flags, ports, s->argv);
	if (s->reach)
		doc_note(f, "next start: LD_PRELOAD does not reach the program (%s): the wrapper's "
		         "attach mode (--attach) tunes its listeners from outside; socktune attach PID "
		         "does it now; the cgroup mode tunes each connection in the kernel (socktune "
		         "attach --cgroup PID now, socktune --cgroup -- CMD at the next start)",
		         unreached(s->reach));
	if (s->uid >= 0 && s->uid != (long)geteuid())
		doc_note(f, "next start: it runs as uid %ld: start it as that user", s->uid);
}

/* Whether the cgroup mode's program sets every option of flags ("--nodelay", "--sndbuf 4M"):
 * the option table's sockops column (the backlog, quick-ack: no). */
static int cgroup_sets(const char *flags)
{
	char w[64];
	int any = 0;
	for (const char *p = flags; *p;) {
		size_t n = strcspn(p, " ");
		if (n > 2 && p[0] == '-' && p[1] == '-' && n < sizeof w) {
			memcpy(w, p + 2, n - 2);
			w[n - 2] = '\0';
			int found = 0;
			for (int i = 0; i < ST_V_COUNT && !found; i++)
				if (st_vars[i].option && strcmp(st_vars[i].option, w) == 0) {
					if (st_sockopts[i].sockops == ST_SOCKOPS_NONE)
						return 0;
					found = any = 1;
				}
			if (!found)
				return 0;
		}
		p += n;
		while (*p == ' ')
			p++;
	}
	return any;
}

void doc_fix_cgroup(struct doc_finding *f, const struct shared_window *d, int l,
                    const char *flags, int forms)
{
	const struct doc_listener *L = &d->l[l];
	const struct doc_start *s = &L->start;
	/* a listener made in the root cgroup: attach --cgroup there is the whole host (it
	 * takes --cgroup-root for that), no cure of one service */
	if ((forms & DOC_CG_NOW) && L->seen_last && L->service >= 0 && L->cgroup_id == 1)
		doc_note(f, "now: the listener was made in the root cgroup, the whole host: attach "
		         "--cgroup would tune every connection of the host (it takes --cgroup-root "
		         "for that); start the service in a cgroup of its own (socktune --cgroup -- "
		         "CMD, or its unit's own cgroup) and attach there");
	else if ((forms & DOC_CG_NOW) && L->seen_last && L->service >= 0)
		doc_fix(f, "socktune attach --cgroup %s %d", flags, L->owners[L->service].pid);
	const struct doc_ns *ns = &d->ns[L->ns];
	if ((forms & DOC_CG_NEXT) && s->known && (ns->ours || ns->name[0])) {
		char in[300] = "", ports[24] = "";
		if (!ns->ours)
			snprintf(in, sizeof in, "ip netns exec %s ", ns->name);
		if (!st_port_ephemeral(L->port))
			snprintf(ports, sizeof ports, " --ports %u", L->port);
		doc_fix(f, "cd %s && %s%ssocktune --cgroup %s%s -- %s", s->dir, s->env, in, flags,
		        ports, s->argv);
	}
	doc_note(f, "the cgroup mode (socktune check says whether this host has it): the kernel "
	         "tunes each connection of the cgroup, nothing per connection in user space; attach "
	         "--cgroup reaches the connections made from now on (a process in the root cgroup, "
	         "the whole host, only with --cgroup-root), socktune --cgroup every one from the "
	         "first");
}

/* A program LD_PRELOAD cannot reach (Go, static, setuid): the kernel can tune its
 * connections from a cgroup sock_ops program, with no polling and no ptrace. */
static void fix_cgroup(struct doc_finding *f, const struct shared_window *d, int l,
                       const char *flags)
{
	const struct doc_listener *L = &d->l[l];
	const struct doc_start *s = &L->start;
	if (L->service < 0 || !s->known || !s->reach || !cgroup_sets(flags))
		return;
	doc_fix_cgroup(f, d, l, flags, DOC_CG_NOW | DOC_CG_NEXT);
}

void doc_fix_flags(struct doc_finding *f, const struct shared_window *d, int l, const char *flags,
                   int connections)
{
	doc_fix_live(f, d, l, flags, connections);
	doc_fix_next_start(f, d, l, flags);
	fix_cgroup(f, d, l, flags);
}

/* Quick-ack: in the process at its next start (one setsockopt per receive), or on the route
 * back to the clients (nothing per call, CAP_NET_ADMIN); with_start: the first said too */
static void fix_quickack(struct doc_finding *f, const struct shared_window *d, int l,
                         int with_start)
{
	const struct doc_listener *L = &d->l[l];
	if (L->start.known && L->start.reach) {
		doc_note(f, "quick-ack is set in the process, which LD_PRELOAD does not reach here");
	} else if (L->start.known) {
		if (with_start)
			doc_fix_next_start(f, d, l, "--quickack");
		doc_note(f, "--quickack: no delay at all, one setsockopt per receive");
	}
	char pre[64];
	doc_in_ns(d, l, pre, sizeof pre);
	if (L->route_fix[0]) { /* (the route back to a client of it, looked up) */
		doc_fix(f, "%s", L->route_fix);
	} else if (L->route_peer[0]) {
		doc_fix(f, "%ssocktune check --route %s", pre, L->route_peer);
		doc_note(f, "check --route prints the route back to that client and the ip route "
		         "change that gives it quickack, where one can");
	} else {
		doc_note(f, "the route back to the clients with quickack 1 (socktune check --route "
		         "with a client's address prints the command)");
	}
}

void doc_fix_delack(struct doc_finding *f, const struct shared_window *d, int l)
{
	if (d->delack_max_us)
		doc_fix_flags(f, d, l, "--delack-max 5ms", 1);
	else
		doc_note(f, "--delack-max needs TCP_DELACK_MAX_US (Linux 6.15), which this kernel "
		         "lacks");
	fix_quickack(f, d, l, 1);
}

/* Whether the service's next start keeps the preload's value against the program's own
 * setsockopt: its precedence is the policy's (the default), not SOCKTUNE_PRECEDENCE=app */
static int preload_holds(const struct doc_start *s)
{
	return s->known && !s->reach && !strstr(s->env, "SOCKTUNE_PRECEDENCE=app") &&
	       !strstr(s->env, "SOCKTUNE_PRECEDENCE='app'");
}

void doc_fix_nagle(struct doc_finding *f, const struct shared_window *d, int l, int overridden,
                   int delack)
{
	const struct doc_listener *L = &d->l[l];
	char live[64], next[80];
	snprintf(live, sizeof live, "--nodelay%s",
	         delack == 2 && d->delack_max_us ? " --delack-max 5ms" : "");
	snprintf(next, sizeof next, "%s%s", live, delack && L->start.known && !L->start.reach
	                                                ? " --quickack" : "");
	if (!overridden) {
		doc_fix_live(f, d, l, live, 1);
		doc_fix_next_start(f, d, l, next);
		fix_cgroup(f, d, l, live);
	} else if (L->service < 0) {
		doc_note(f, "no process holding the listener was found: no command to show");
	} else {
		/* a value on the listener reaches each connection at accept, and the program
		 * undoes it there: only what refuses or outlasts the program's own call holds */
		int held = preload_holds(&L->start), cg = cgroup_sets(live);
		doc_note(f, "the program sets TCP_NODELAY to 0 itself on each connection it accepts, "
		         "after the kernel copied the listener's 1 to it: a fix on the listener "
		         "(attach --nodelay, the wrapper's --attach mode) is undone on every new "
		         "connection, and attach --connections reaches only those open now; what "
		         "holds: the cgroup mode's setsockopt hook, which refuses the program's own "
		         "call%s", held ? ", and the preload at the next start, which sets the "
		         "policy's value back after it (precedence policy)" : "");
		if (cg)
			doc_fix_cgroup(f, d, l, live, DOC_CG_NOW);
		if (held)
			doc_fix_next_start(f, d, l, next);
		if (cg)
			doc_fix_cgroup(f, d, l, live, DOC_CG_NEXT);
	}
	if (delack)
		fix_quickack(f, d, l, 0);
}
