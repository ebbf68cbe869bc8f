/* socktune watch: the loop.  One thread, one poll: the listener samples every --interval
 * (a listener dump of a namespace is ~0.1 ms), the namespaces found again every 2 s, the
 * textfile every --every, and the HTTP clients of --listen, each with its deadline, so no
 * client can hold up a sample.
 *
 * A listener is an address and port in a namespace, whatever sockets make it: SO_REUSEPORT
 * groups and a server restarted on the same port are one listener, their queues, backlogs
 * and drops summed.  Its service is looked up (holders.c's /proc/PID/fd walk) when a socket
 * the watch has not seen appears (a restart, or another program on the port), at most once
 * a second, less often when a walk costs more (IDENT_SHARE: the descriptors of a node
 * holding many connections), and at once when the process it named is gone (its pid and
 * start time no longer match): what watch says next names the live holder. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/bpfhost.h"
#include "host/clock.h"
#include "host/diag.h"
#include "host/owned.h"
#include "watch/watch.h"

#define SCAN_EVERY_S 2.0  /* namespaces found again */
#define IDENT_EVERY_S 1.0 /* holders looked up, at most this often */
#define IDENT_MAX_S 60.0  /* and at least this often while a listener waits for its name */
#define IDENT_SHARE 0.002 /* of one core the lookups may take: a walk of every /proc/PID/fd
                           * costs with the descriptors of the node (~0.1 s of CPU at 20,000
                           * held sockets), so one that took T s waits T / IDENT_SHARE */
#define IDENT_TRIES 3     /* lookups that found no holder before the listener is shown as such */

struct sample_ctx {
	struct watch *w;
	const struct watch_ns *ns;
};

static int port_target(const struct watch *w, unsigned port)
{
	for (int k = 0; k < w->nports; k++)
		if (w->ports[k] == port)
			return 1;
	return 0;
}

static struct watch_listener *find(struct watch *w, unsigned long long ns, const struct diag_sock *s)
{
	size_t alen = s->family == AF_INET6 ? 16 : 4;
	struct watch_listener *free_slot = NULL;
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		if (!l->used) {
			free_slot = free_slot ? free_slot : l;
			continue;
		}
		if (l->ns_ino == ns && l->port == s->sport && l->family == s->family &&
		    memcmp(l->addr, s->src, alen) == 0)
			return l;
	}
	if (!free_slot && w->nl == WATCH_MAX_LISTENERS) {
		w->listeners_not_followed++;
		if (!w->listener_cap_said++)
			fprintf(stderr, "socktune: watch: more than %d listeners: those past them are not "
			        "watched (socktune_watch_listeners_not_followed)\n", WATCH_MAX_LISTENERS);
		return NULL;
	}
	struct watch_listener *l = free_slot ? free_slot : &w->l[w->nl++];
	memset(l, 0, sizeof *l);
	l->used = 1;
	l->ns_ino = ns;
	l->family = s->family;
	memcpy(l->addr, s->src, alen);
	l->port = s->sport;
	return l;
}

static void on_listener(const struct diag_sock *s, void *ctx)
{
	struct sample_ctx *x = ctx;
	struct watch *w = x->w;
	int by_port = port_target(w, s->sport);
	if (w->nports && !by_port && !w->npids && !w->ncgroups)
		return;
	struct watch_listener *l = find(w, x->ns->ino, s);
	if (!l)
		return;
	int known = 0;
	for (int k = 0; k < l->ninodes; k++)
		known |= l->inodes[k] == s->inode;
	if (!known) {
		int at = l->ninodes < WATCH_INODES ? l->ninodes++
		         : (int)(s->inode % WATCH_INODES); /* (a large SO_REUSEPORT group: the oldest
		                                            * forgotten) */
		l->inodes[at] = s->inode;
		l->cookies[at] = s->cookie;
		/* a PID or cgroup target decides whether it is shown, unless its port is a target;
		 * a socket new to a known listener is a restart, or another program on the port:
		 * its holder is looked up again (its name and the pid its fixes name) */
		l->want_ident = 1;
		if ((w->npids || w->ncgroups) && !by_port && !l->known)
			l->excluded = 1; /* until its holder is found among the targets */
	}
	l->s_sockets++;
	l->cgroup_id = s->cgroup_id;
	l->s_queue += s->rqueue;
	l->s_backlog += s->wqueue;
	if (s->has_mem) {
		l->s_rb += s->mem[MEM_RCVBUF];
		l->s_tb += s->mem[MEM_SNDBUF];
		l->s_drops += s->mem[MEM_DROPS];
	}
}

static void sample(struct watch *w)
{
	double t = clock_mono_s();
	int incomplete[WATCH_MAX_NS] = {0};
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		l->s_sockets = l->s_queue = l->s_backlog = 0;
		l->s_rb = l->s_tb = 0;
		l->s_drops = 0;
	}
	w->listeners_not_followed = 0;
	w->l_sample_sockets = 0;
	for (int k = 0; k < w->nns; k++) {
		struct watch_ns *ns = &w->ns[k];
		if (ns->nl < 0) {
			incomplete[k] = 1;
			continue;
		}
		struct sample_ctx x = {w, ns};
		long before = diag_interrupted;
		/* (listeners only: the kernel skips the established table, whatever its size; their
		 * memory, no tcp_info) */
		int n = diag_dump(ns->nl, 1u << TS_LISTEN, DIAG_MEM_ONLY, on_listener, &x);
		if (n > 0)
			w->l_sample_sockets += (unsigned long long)n;
		if (n < 0) {
			/* an answer left half read would make the next request EBUSY: a new socket */
			w->dump_errors++;
			close(ns->nl);
			ns->nl = watch_ns_diag(ns);
			if (ns->nl < 0)
				ns->nl = -1;
		}
		incomplete[k] = n < 0 || diag_interrupted != before;
	}
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		if (!l->used)
			continue;
		if (l->s_sockets) {
			l->sockets = l->s_sockets;
			l->queue = l->s_queue;
			l->backlog = l->s_backlog;
			l->rb = l->s_rb;
			l->tb = l->s_tb;
			l->drops = l->s_drops;
			for (int c = 0; c < 2; c++)
				if (l->queue > l->peak[c])
					l->peak[c] = l->queue;
			if (!l->w_samples++)
				l->w_drops0 = l->drops;
			if (l->queue > l->w_peak)
				l->w_peak = l->queue;
			l->w_queued += l->queue > 0;
			if (!l->up)
				l->gone_said[0] = l->gone_said[1] = 0;
			l->up = 1;
			continue;
		}
		/* not seen: gone, unless its namespace's dump was cut short (or it went) */
		int ns_k = -1;
		for (int j = 0; j < w->nns; j++)
			if (w->ns[j].ino == l->ns_ino)
				ns_k = j;
		if (ns_k >= 0 && incomplete[ns_k])
			continue;
		l->up = 0;
		l->queue = 0;
		l->sockets = 0;
		l->ninodes = 0;
	}
	w->samples++;
	w->sample_seconds += clock_mono_s() - t;
}

/* The service's holder of a socket: the holder whose parent holds it not (a prefork
 * master, not its workers); -1 none */
static int service_pid(const struct holders *hs, unsigned long long ino)
{
	const struct holder *first = holders_find(hs, ino), *end = hs->h + hs->n;
	for (const struct holder *h = first; h && h < end && h->ino == ino; h++) {
		int parent = ppid_of(h->pid), up = 0;
		for (const struct holder *k = first; k < end && k->ino == ino; k++)
			up |= k->pid == parent;
		if (!up)
			return h->pid;
	}
	return first ? first->pid : -1;
}

static void identify(struct watch *w, double now)
{
	double *next = &w->next_ident;
	int want = 0;
	for (int k = 0; k < w->nl && !want; k++)
		want = w->l[k].used && w->l[k].want_ident;
	if (!want || now < *next)
		return;
	w->ident_scans++;
	struct holders hs = {0};
	double cpu = clock_cpu_s();
	holders_scan(&hs, NULL, 0); /* (all: a target's listener may be held by its workers) */
	cpu = clock_cpu_s() - cpu;
	w->ident_every = cpu / IDENT_SHARE < IDENT_EVERY_S ? IDENT_EVERY_S
	               : cpu / IDENT_SHARE > IDENT_MAX_S   ? IDENT_MAX_S
	                                                   : cpu / IDENT_SHARE;
	*next = now + w->ident_every;
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		if (!l->used || !l->want_ident)
			continue;
		int pid = -1, held = 0;
		for (int i = 0; i < l->ninodes; i++) {
			int p = service_pid(&hs, l->inodes[i]);
			const struct holder *h = holders_find(&hs, l->inodes[i]);
			for (; h && h < hs.h + hs.n && h->ino == l->inodes[i]; h++)
				held = held || watch_is_target(w, h->pid); /* (the first holder found decides) */
			if (pid < 0)
				pid = p;
		}
		if ((w->npids || w->ncgroups) && held)
			l->excluded = 0;
		if (pid < 0 && ++l->ident_tries < IDENT_TRIES && !l->known)
			continue;
		l->want_ident = 0;
		l->ident_tries = 0;
		if (pid > 0) {
			l->service_pid = pid;
			l->service_start = own_start_of(pid);
		} else if (l->known) {
			l->service_pid = 0; /* (its holder gone, none found: no pid is named) */
		}
		/* names read again each time: the same service restarted keeps its series (same
		 * comm, unit, container, pod), another program on the port gets its own */
		if (pid > 0) {
			struct watch_ident id;
			watch_ident_of(pid, &id);
			l->id = id;
		}
		l->known = 1;
	}
	free(hs.h);
}

/* The holders of the listeners whose service process is gone (or is another process now)
 * looked up again at once, so that what is said next names the live one */
static void watch_holders_check(struct watch *w)
{
	int gone = 0, pid = 0;
	unsigned long long start = 0;
	for (int k = 0; k < w->nl; k++) {
		struct watch_listener *l = &w->l[k];
		if (!l->used || !l->known || l->service_pid <= 0)
			continue;
		if (l->service_pid != pid) /* (a server's listeners come together: read once) */
			start = own_start_of(pid = l->service_pid);
		if (start == l->service_start)
			continue;
		l->want_ident = 1;
		gone = 1;
	}
	if (gone) {
		w->next_ident = 0; /* (once per change: the lookup settles it) */
		identify(w, clock_mono_s());
	}
}

/* SIGHUP (what a daemon is sent to look again) and SIGUSR1 (a state line) are asked for,
 * never an end: their default action would end the watch, unsaid */
static volatile sig_atomic_t got_hup, got_usr1;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else
		got_usr1 = 1;
}

static void hold_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

/* SIGHUP: the namespaces found again and every listener's service looked up again now */
static void rescan(struct watch *w)
{
	fprintf(stderr, "socktune: watch: SIGHUP: namespaces and listeners' services looked up "
	        "again\n");
	watch_scan_ns(w);
	watch_close_sync(w);
	for (int k = 0; k < w->nl; k++)
		if (w->l[k].used)
			w->l[k].want_ident = 1;
	w->next_ident = 0;
	identify(w, clock_mono_s());
}

/* SIGUSR1: one line of what the watch follows and how fresh its samples are */
static void state_line(const struct watch *w, double now)
{
	int listeners = 0, findings = 0;
	for (int k = 0; k < w->nl; k++)
		listeners += w->l[k].used && w->l[k].known && !w->l[k].excluded && w->l[k].up;
	for (int k = 0; k < WATCH_MAX_FINDINGS; k++)
		findings += w->find[k].used && w->find[k].holds;
	fprintf(stderr, "socktune: watch: SIGUSR1: %d namespaces, %d listeners shown, %d findings "
	        "held, %llu listener samples, connection sample %.0f s ago (every %.0f s)\n",
	        w->nns, listeners, findings, w->samples,
	        w->conn_sampled_at > 0 ? now - w->conn_sampled_at : 0, w->conn_every);
	if (w->a->apply)
		fprintf(stderr, "socktune: watch: SIGUSR1: --apply: %llu changes, %d NODELAY cures "
		        "whose new connections are still read\n", w->applied_changes,
		        watch_apply_judging(w));
}

static int write_textfile(struct watch *w)
{
	size_t len;
	char *text = watch_prometheus(w, WATCH_FILE, &len), err[512];
	if (!text) {
		fprintf(stderr, "socktune: watch: --textfile: out of memory\n");
		return -1;
	}
	int rc = write_atomic(w->a->textfile, text, len, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "socktune: watch: --textfile: %s\n", err);
	free(text);
	return rc;
}

/* A cgroup target, t: a directory of the cgroup v2 mount (/sys/fs/cgroup/system.slice/x.service)
 * or a path below the mount as /proc/PID/cgroup writes it (/system.slice/x.service) */
static int cgroup_target(struct watch *w, const char *t)
{
	char mount[1024], full[4096], canon[PATH_MAX], err[512];
	if (cg_v2_mount(mount, sizeof mount, err, sizeof err) != 0) {
		fprintf(stderr, "socktune: watch %s: %s\n", t, err);
		return -1;
	}
	size_t ml = strlen(mount);
	const char *rel = strncmp(t, mount, ml) == 0 && (t[ml] == '/' || t[ml] == '\0') ? t + ml : t;
	snprintf(full, sizeof full, "%s%s", mount, rel);
	/* the path as /proc/PID/cgroup writes it: no "..", ".", "//" or symlink left, else it
	 * would match no process and the watch would show nothing, unsaid */
	struct stat st;
	if (!realpath(full, canon) || stat(canon, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    !cg_is_v2(canon) || strncmp(canon, mount, ml) != 0 ||
	    (canon[ml] != '/' && canon[ml] != '\0') || strlen(canon + ml) >= sizeof w->cgroups[0]) {
		fprintf(stderr, "socktune: watch %s: not a cgroup v2 directory (%s is not one under "
		        "the mount %s)\n", t, full, mount);
		return -1;
	}
	snprintf(w->cgroups[w->ncgroups++], sizeof w->cgroups[0], "%s", canon[ml] ? canon + ml : "/");
	return 0;
}

static int targets(struct watch *w)
{
	for (int k = 0; k < w->a->ntargets; k++) {
		const char *t = w->a->targets[k];
		struct target tw; /* (each checked by watch_parse) */
		parse_target(t, TARGET_PID | TARGET_PORT | TARGET_CGROUP, &tw);
		if (tw.kind == TARGET_CGROUP) {
			if (cgroup_target(w, t) != 0)
				return -1;
			continue;
		}
		if (tw.kind == TARGET_PORT) {
			w->ports[w->nports++] = tw.port;
			continue;
		}
		int pid = tw.pid;
		if (kill(pid, 0) != 0 && errno == ESRCH) {
			fprintf(stderr, "socktune: watch %d: no such process\n", pid);
			return -1;
		}
		w->pids[w->npids++] = pid;
	}
	return 0;
}

int watch_main(void *args)
{
	const struct watch_args *a = args;
	static struct watch w; /* (its tables are large) */
	memset(&w, 0, sizeof w);
	w.a = a;
	w.consumers = (a->listen ? 1 << WATCH_SCRAPE : 0) | (a->textfile ? 1 << WATCH_FILE : 0);
	if (targets(&w) != 0)
		return EXIT_NOT_FOUND;
	if (watch_apply_open(&w) != 0)
		return 1;
	int lfd = -1;
	if (a->listen) {
		char err[256];
		lfd = watch_http_open(a->listen, err, sizeof err);
		if (lfd < 0) {
			fprintf(stderr, "socktune: watch --listen %s: %s\n", a->listen, err);
			return EXIT_NOT_FOUND;
		}
	}
	stop_on_signals();
	hold_signals();
	signal(SIGPIPE, SIG_IGN);
	double t0 = clock_mono_s();
	w.next_ident = t0;
	w.started = t0;
	watch_scan_ns(&w);
	watch_close_sync(&w);
	watch_window_start(&w);
	sample(&w);
	watch_conn_sample(&w, clock_mono_s());
	identify(&w, clock_mono_s());
	if (a->textfile && write_textfile(&w) != 0) {
		watch_http_close(lfd);
		watch_ns_close(&w);
		return 1;
	}
	double next_sample = t0 + a->interval, next_scan = t0 + SCAN_EVERY_S;
	double next_file = t0 + a->every, end = a->seconds > 0 ? t0 + a->seconds : 0;
	double next_window = t0 + a->window;
	while (!stop_signal) {
		double now = clock_mono_s();
		if (end && now >= end)
			break;
		double wake = next_sample;
		if (next_scan < wake)
			wake = next_scan;
		if (a->textfile && next_file < wake)
			wake = next_file;
		if (next_window < wake)
			wake = next_window;
		if (end && end < wake)
			wake = end;
		if (lfd >= 0 && watch_http_deadline(now) < wake)
			wake = watch_http_deadline(now);
		static struct pollfd pf[WATCH_HTTP_CLIENTS + 1 + WATCH_MAX_NS];
		int n = lfd >= 0 ? watch_http_fds(lfd, pf, now) : 0;
		int nc = watch_close_fds(pf + n, WATCH_MAX_NS, now, &wake);
		int ms = wake > now ? (int)((wake - now) * 1000) + 1 : 0;
		if (poll(pf, (nfds_t)(n + nc), ms) < 0 && errno != EINTR)
			break;
		now = clock_mono_s();
		watch_close_run(&w, pf + n, nc, now);
		if (got_hup) {
			got_hup = 0;
			rescan(&w);
			next_scan = now + SCAN_EVERY_S;
		}
		if (got_usr1) {
			got_usr1 = 0;
			state_line(&w, now);
		}
		if (now >= next_scan) {
			watch_scan_ns(&w);
			watch_close_sync(&w);
			next_scan = now + SCAN_EVERY_S;
		}
		if (now >= next_sample) {
			sample(&w);
			watch_conn_sample(&w, clock_mono_s());
			identify(&w, clock_mono_s());
			next_sample += a->interval;
			if (next_sample < now) /* (behind: no catching up in a burst) */
				next_sample = now + a->interval;
		}
		if (now >= next_window) {
			watch_holders_check(&w); /* (a fix names the live holder, never one gone) */
			watch_findings(&w, now);
			next_window = now + a->window;
		}
		if (lfd >= 0)
			watch_http_run(lfd, pf, n, now, &w);
		if (a->textfile && now >= next_file) {
			write_textfile(&w); /* (a failure is said; the next try may work) */
			next_file = now + a->every;
		}
	}
	if (stop_signal)
		fprintf(stderr, "socktune: watch: %s: ending\n", stop_name());
	watch_http_close(lfd);
	watch_close_end();
	watch_ns_close(&w);
	return 0;
}
