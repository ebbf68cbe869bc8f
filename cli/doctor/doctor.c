/* socktune doctor [PID...|:PORT...] [--seconds N] [--json]: watch the TCP listeners of a
 * running server, and the connections on them, for a few seconds, changing nothing; then say
 * which setting cures what was seen (findings.c), with the numbers.
 *
 * The window: the listeners' accept queues sampled every 20 ms through sock_diag, every 5 ms
 * while one is not empty (a burst that fills a queue lasts tens of milliseconds); the
 * connections, with their tcp_info, every 200 ms; the namespace's TcpExt counters at both
 * ends.  At the end, with ptrace access,
 * TCP_NODELAY read on a pidfd_getfd copy of each listener and of the worst connections:
 * sock_diag does not report it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "socktune_host.h"
#include "socktune_opts.h"
#include "host/clock.h"
#include "doctor/doctor.h"
#include "host/grow.h"
#include "host/probe.h"


#define TICK_MS 20           /* listener samples: 50 a second */
#define BUSY_TICK_MS 5       /* ... 200 while an accept queue holds connections */
#define CONN_EVERY_MS 200    /* connection samples, at most */
#define MAX_CONNS 100000     /* connections followed over the window (~70 MB) */
#define CONN_STATES (1u << TS_ESTABLISHED | 1u << TS_FIN_WAIT1 | 1u << TS_FIN_WAIT2 | \
                     1u << TS_CLOSE_WAIT | 1u << TS_LAST_ACK | 1u << TS_CLOSING)

/* ---- the samples ---- */

struct sample_ctx {
	struct shared_window *d;
	int ns;
	int first;                 /* the first sample: listeners are found */
	const struct holders *hs;  /* who holds what (first sample) */
	const int *pids;           /* PID targets (NULL: all) */
	int npids;
	const unsigned *ports;     /* :PORT targets */
	int nports;
	int with_info;
	long long count;           /* connections in this sample */
	double t;                  /* when the sample began */
};

static int wanted(const struct sample_ctx *x, const struct diag_sock *s)
{
	if (x->nports) {
		for (int k = 0; k < x->nports; k++)
			if (x->ports[k] == s->sport)
				return 1;
		if (!x->pids)
			return 0;
	}
	if (!x->pids)
		return 1;
	const struct holder *h = holders_find(x->hs, s->inode);
	for (; h && h < x->hs->h + x->hs->n && h->ino == s->inode; h++)
		for (int k = 0; k < x->npids; k++)
			if (h->pid == x->pids[k])
				return 1;
	return 0;
}

/* The holder of a listener whose parent holds it not: a prefork master, not its workers */
static int service_of(const struct doc_listener *l)
{
	for (int o = 0; o < l->nowners; o++) {
		int parent = ppid_of(l->owners[o].pid), up = 0;
		for (int k = 0; k < l->nowners; k++)
			up |= l->owners[k].pid == parent;
		if (!up)
			return o;
	}
	return l->nowners ? 0 : -1;
}

/* Every process holding listener l (one entry each, however many descriptors), the
 * service's one, and how it would start again: read now, while it runs */
static void holders_of(const struct shared_window *d, struct doc_listener *l,
                       const struct holders *hs)
{
	for (const struct holder *h = holders_find(hs, l->inode);
	     h && h < hs->h + hs->n && h->ino == l->inode; h++) {
		if (l->nowners && l->owners[l->nowners - 1].pid == h->pid)
			continue; /* (sorted by pid: the same process again) */
		if (l->nowners == DOC_MAX_OWNERS) {
			l->owners_more++;
			continue;
		}
		struct doc_owner *o = &l->owners[l->nowners++];
		o->pid = h->pid;
		o->fd = h->fd;
		comm_of(h->pid, o->comm, sizeof o->comm);
	}
	l->service = service_of(l);
	if (l->service < 0)
		return;
	int pid = l->owners[l->service].pid;
	for (const struct doc_listener *k = d->l; k < l; k++)
		if (k->service >= 0 && k->owners[k->service].pid == pid) {
			l->start = k->start; /* (a process with many listeners: read once) */
			return;
		}
	doc_start_of(pid, &l->start);
}

static void on_listener(const struct diag_sock *s, void *ctx)
{
	struct sample_ctx *x = ctx;
	struct shared_window *d = x->d;
	struct doc_listener *l = NULL;
	for (int k = 0; k < d->nl && !l; k++)
		if (d->l[k].inode == s->inode && d->l[k].ns == x->ns)
			l = &d->l[k];
	if (!l) {
		if (!x->first || !wanted(x, s))
			return;
		if (d->nl == DOC_MAX_LISTENERS) {
			d->listeners_dropped++;
			return;
		}
		l = &d->l[d->nl++];
		memset(l, 0, sizeof *l);
		l->ns = x->ns;
		l->family = s->family;
		l->port = s->sport;
		memcpy(l->addr, s->src, 16);
		l->inode = s->inode;
		l->asked = -1;
		l->nodelay = -1;
		holders_of(d, l, x->hs);
	}
	l->cgroup_id = s->cgroup_id;
	if (s->cong[0]) /* (in the samples with tcp_info: the first and the last) */
		memcpy(l->cong, s->cong, sizeof l->cong);
	l->backlog = s->wqueue;
	l->queue_now = s->rqueue;
	if (s->rqueue > l->queue_peak)
		l->queue_peak = s->rqueue;
	l->queued_samples += s->rqueue > 0;
	if (s->has_mem) {
		l->mem_samples++;
		l->rb = s->mem[MEM_RCVBUF];
		l->tb = s->mem[MEM_SNDBUF];
		if (x->first)
			l->drops_first = s->mem[MEM_DROPS];
		l->drops_last = s->mem[MEM_DROPS];
	}
	l->seen_last = 1;
}

static void on_conn(const struct diag_sock *s, void *ctx)
{
	struct sample_ctx *x = ctx;
	struct shared_window *d = x->d;
	int l = doc_listener_of(d, x->ns, s);
	if (l < 0 || !s->info_len)
		return;
	x->count++;
	struct doc_conn *c = doc_conn_find(d, s->cookie, 0);
	if (!c) {
		if (d->nc >= MAX_CONNS) {
			d->conns_dropped++;
			return;
		}
		if (!(c = doc_conn_find(d, s->cookie, 1)))
			return;
		c->listener = l;
		c->inode = s->inode;
		c->first = *s;
		c->first_t = x->t;
		c->from_start = x->first;
		c->nodelay = -1;
		c->pid = c->fd = -1;
		d->l[l].conns++;
	}
	if (!c->inode) /* (0 while it waited in the accept queue) */
		c->inode = s->inode;
	double dt = x->t - c->last_t;
	if (c->samples && dt > 0 && s->ti.bytes_received > c->last.ti.bytes_received &&
	    (double)(s->ti.bytes_received - c->last.ti.bytes_received) / dt > c->max_rcv_pace)
		c->max_rcv_pace = (double)(s->ti.bytes_received - c->last.ti.bytes_received) / dt;
	doc_rcv_held_add(c, s);
	c->last = *s;
	c->last_t = x->t;
	c->sweep = d->sweeps;
	c->samples++;
	/* less than a segment held back while data is in flight: Nagle on this connection */
	if (s->ti.notsent_bytes > 0 && s->ti.unacked > 0 && s->ti.notsent_bytes < s->ti.snd_mss) {
		c->held_samples++;
		c->held_bytes = s->ti.notsent_bytes;
	}
	if (s->ti.rtt > c->max_rtt)
		c->max_rtt = s->ti.rtt;
	if (s->ti.ato > c->max_ato)
		c->max_ato = s->ti.ato;
}

/* A dump the kernel refused or cut short: counted, said once, and the socket made again (an
 * answer left half read would make the next request EBUSY).  Returns -1 on the first. */
static int dump_failed(struct shared_window *d, struct doc_ns *ns, int err)
{
	if (!d->dump_errors++)
		snprintf(d->dump_error, sizeof d->dump_error, "sock_diag dump: %s", strerror(-err));
	close(ns->nl);
	ns->nl = diag_open(ns->pid);
	if (ns->nl < 0) {
		snprintf(ns->error, sizeof ns->error, "sock_diag: %s", strerror(-ns->nl));
		ns->nl = -1;
	}
	return -1;
}

static int sample(struct shared_window *d, const struct holders *hs, const int *pids, int npids,
                  const unsigned *ports, int nports, int first, int conns, int with_info)
{
	int rc = 0;
	d->sweeps += conns != 0;
	for (int k = 0; k < d->nns; k++) {
		if (d->ns[k].nl < 0)
			continue;
		struct sample_ctx x = {d, k, first, hs, pids, npids, ports, nports, with_info, 0, 0};
		double t = clock_mono_s();
		for (int j = 0; j < d->nl; j++)
			d->l[j].seen_last = d->l[j].ns == k ? 0 : d->l[j].seen_last;
		int n = diag_dump(d->ns[k].nl, 1u << TS_LISTEN, with_info, on_listener, &x);
		d->listener_sample_us += (clock_mono_s() - t) * 1e6;
		d->listener_samples++;
		if (n < 0) {
			rc = dump_failed(d, &d->ns[k], n);
			continue;
		}
		if (!conns || !d->nl)
			continue;
		x.t = t = clock_mono_s();
		if (k == 0)
			d->conns_dropped = 0; /* (the last sample's count is reported) */
		n = diag_dump(d->ns[k].nl, CONN_STATES, 1, on_conn, &x);
		d->conn_sample_us += (clock_mono_s() - t) * 1e6;
		d->conn_samples++;
		if (n < 0)
			rc = dump_failed(d, &d->ns[k], n);
		d->final_t = x.t;
		if (x.count > d->max_conns_in_sample)
			d->max_conns_in_sample = x.count;
	}
	return rc;
}

/* ---- the command ---- */

#define PROGRESS_EVERY_S 0.5
#define PROGRESS_WIDTH 79

/* The line a terminal shows while doctor watches, written over itself */
static void progress(const struct shared_window *d, double elapsed)
{
	unsigned queued = 0;
	for (int k = 0; k < d->nl; k++)
		queued += d->l[k].queue_now;
	char line[PROGRESS_WIDTH + 1];
	snprintf(line, sizeof line, "socktune: doctor: %.1f of %g s; %zu connection%s seen, "
	         "%u queued", elapsed, d->seconds, d->nc, d->nc == 1 ? "" : "s", queued);
	fprintf(stderr, "\r%-*s", PROGRESS_WIDTH, line);
	fflush(stderr);
}

/* Whether this kernel has a socket option (ENOPROTOOPT: not yet) */
static int kernel_has(int level, int opt)
{
	long long v;
	int fd = probe_socket(), ok = fd >= 0 && probe_get_int(fd, level, opt, &v) == 0;
	probe_close(fd);
	return ok;
}

/* The targets' words: :PORTs and pids; a pid whose descriptors cannot be read is said */
static int split_targets(const struct shared_window *d, int *pids, int *npids, unsigned *ports,
                         int *nports)
{
	for (int k = 0; k < d->ntargets; k++) {
		struct target t; /* (each checked by doctor_parse) */
		parse_target(d->targets[k], TARGET_PID | TARGET_PORT, &t);
		if (t.kind == TARGET_PORT) {
			ports[(*nports)++] = t.port;
			continue;
		}
		int pid = t.pid;
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/fd", pid);
		if (access(path, R_OK) != 0) {
			int err = errno;
			if (err == ENOENT)
				return doctor_fail(d, 3, "doctor %d: no such process", pid);
			return doctor_fail(d, 3, "doctor %d: cannot read %s: %s (the same uid, or root)",
			                   pid, path, strerror(err));
		}
		pids[(*npids)++] = pid;
	}
	return 0;
}

/* Which of the targets has no listener: said, one line each, and appended to why ("; "
 * between) */
static int say_missing(const struct shared_window *d, const int *pids, int npids,
                       const unsigned *ports, int nports, char *why, size_t n)
{
	int missing = 0;
	char line[400];
	for (int k = 0; k < npids; k++) {
		int found = 0;
		for (int j = 0; j < d->nl; j++)
			for (int o = 0; o < d->l[j].nowners; o++)
				found |= d->l[j].owners[o].pid == pids[k];
		if (!found) {
			snprintf(line, sizeof line, "doctor %d: no TCP listener of this process (in its "
			         "network namespace): nothing to watch", pids[k]);
			fprintf(stderr, "socktune: %s\n", line);
			doc_say(why, n, "%s%s", why[0] ? "; " : "", line);
		}
		missing += !found;
	}
	for (int k = 0; k < nports; k++) {
		int found = 0;
		for (int j = 0; j < d->nl; j++)
			found |= d->l[j].port == ports[k];
		unsigned long long there = 0;
		int other = found ? doc_port_elsewhere(ports[k], &there) : 0;
		if (other) /* (found here: the one there is said, not watched) */
			fprintf(stderr, "socktune: doctor :%u: process %d listens on this port in network "
			        "namespace %llu too, which :PORT does not look in: socktune doctor %d "
			        "watches it there\n", ports[k], other, there, other);
		if (!found) {
			/* :PORT looks in doctor's own network namespace; a PID, in the process's */
			unsigned long long ino = 0;
			int pid = doc_port_elsewhere(ports[k], &ino);
			if (pid)
				snprintf(line, sizeof line, "doctor :%u: no TCP listener on this port here "
				         "(network namespace %llu): nothing to watch; process %d listens on "
				         "it in network namespace %llu: socktune doctor %d watches it there",
				         ports[k], netns_of(0), pid, ino, pid);
			else
				snprintf(line, sizeof line, "doctor :%u: no TCP listener on this port here "
				         "(network namespace %llu): nothing to watch; :PORT looks in this "
				         "network namespace only, socktune doctor PID in the process's own",
				         ports[k], netns_of(0));
			fprintf(stderr, "socktune: %s\n", line);
			doc_say(why, n, "%s%s", why[0] ? "; " : "", line);
		}
		missing += !found;
	}
	return missing;
}

int doctor_main(void *args)
{
	struct shared_window *d = args;
	/* from the start: a signal during the scans ends the window at its first sample, and
	 * the report of what was seen comes, then the signal's status */
	stop_on_signals();
	/* with 0-2 closed, the first socket opened would take one: the report would go into it */
	int no_stdout = fcntl(1, F_GETFD) < 0;
	stdio_fill();
	if (no_stdout) {
		fprintf(stderr, "socktune: doctor: stdout is closed: no report to write\n");
		return 3;
	}
	int pids[64], npids = 0;
	unsigned ports[64];
	int nports = 0;
	if (split_targets(d, pids, &npids, ports, &nports) != 0)
		return 3;
	if (doc_ns_add(d, 0) < 0)
		return doctor_fail(d, 3, "doctor: cannot read this network namespace");
	for (int k = 0; k < npids; k++)
		doc_ns_add(d, pids[k]);
	char why[1024] = ""; /* under --json, what the error document says */
	for (int k = 0; k < d->nns; k++) {
		if (d->ns[k].nl < 0) {
			fprintf(stderr, "socktune: doctor: %s\n", d->ns[k].error);
			doc_say(why, sizeof why, "%sdoctor: %s", why[0] ? "; " : "", d->ns[k].error);
		}
		doc_ns_counters(&d->ns[k], d->ns[k].start);
	}
	d->rto_min_us = kernel_has(IPPROTO_TCP, TCP_RTO_MIN_US);
	d->delack_max_us = kernel_has(IPPROTO_TCP, TCP_DELACK_MAX_US);
	/* every process: a listener's holders are a prefork master and its workers, whichever
	 * pid was given */
	struct holders hs = {0};
	holders_scan(&hs, NULL, 0);
	signal(SIGPIPE, SIG_IGN);
	doc_closes_open(d); /* (before the first sample: a connection freed from then on counts) */
	double t0 = clock_mono_s(), end = t0 + d->seconds;
	if (sample(d, &hs, npids ? pids : NULL, npids, ports, nports, 1, 1, 1) != 0 &&
	    (d->ns[0].nl < 0 || !d->nl)) {
		free(hs.h);
		return doctor_fail(d, 3, "doctor: %s: nothing to look at", d->dump_error);
	}
	/* listeners are found in the first sample only: a target with none now has none to
	 * watch, and when no target has one there is nothing to wait for */
	int missing = say_missing(d, pids, npids, ports, nports, why, sizeof why);
	if ((npids || nports) && missing == npids + nports) {
		free(hs.h);
		if (d->json)
			rec_error_json(stdout, "doctor", why, 3);
		return 3;
	}
	/* the first sample is in: from here on, what happens is seen (said for whoever waits
	 * on a long window, or starts the traffic to diagnose only then) */
	fprintf(stderr, "socktune: doctor: watching %d listener%s for %g s\n", d->nl,
	        d->nl == 1 ? "" : "s", d->seconds);
	/* on a terminal, a line kept up to date while it watches (a window of minutes is not
	 * a hang); nothing of it where stderr is a file or a pipe */
	d->progress = isatty(2);
	double next_progress = t0;
	/* a listener sample every 20 ms, every 5 ms while a queue is not empty (a burst fills
	 * and drains one in tens of milliseconds); the connections every 200 ms */
	double next_conn = t0 + CONN_EVERY_MS / 1000.0;
	for (long n = 0; !stop_signal && clock_mono_s() < end && n < 10000000; n++) {
		int busy = 0;
		for (int k = 0; k < d->nl; k++)
			busy |= d->l[k].queue_now > 0;
		struct timespec ts = {0, (busy ? BUSY_TICK_MS : TICK_MS) * 1000000L};
		nanosleep(&ts, NULL);
		int conns = clock_mono_s() >= next_conn;
		double cpu = clock_cpu_s();
		sample(d, &hs, NULL, 0, NULL, 0, 0, conns, 0);
		doc_closes_read(d);
		if (conns && d->nc) {
			double t = clock_mono_s();
			doc_look_during(d);
			d->conn_sample_us += (clock_mono_s() - t) * 1e6;
		}
		/* the next connection sample in 200 ms, or in 20 times the CPU this one took: with
		 * tens of thousands of connections the samples keep to about 5% of a CPU.  CPU,
		 * not wall time: on a loaded machine the time spent waiting for a CPU is no cost
		 * of ours, and counted it spaced the samples seconds apart (a session of 2 s went
		 * unseen) */
		double took = clock_cpu_s() - cpu, gap = CONN_EVERY_MS / 1000.0;
		if (conns)
			next_conn = clock_mono_s() + (20 * took > gap ? 20 * took : gap);
		if (d->progress && clock_mono_s() >= next_progress) {
			progress(d, clock_mono_s() - t0);
			next_progress = clock_mono_s() + PROGRESS_EVERY_S;
		}
	}
	if (d->progress)
		fprintf(stderr, "\r%*s\r", PROGRESS_WIDTH, ""); /* (the line cleared) */
	d->interrupted = stop_signal != 0;
	sample(d, &hs, NULL, 0, NULL, 0, 0, 1, 1); /* the end: rb/tb, the connections' last */
	d->elapsed_s = clock_mono_s() - t0;
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		d->cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
		            (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	for (int k = 0; k < d->nns; k++)
		doc_ns_counters(&d->ns[k], d->ns[k].end);
	free(hs.h);
	if (d->listener_samples)
		d->listener_sample_us /= (double)d->listener_samples;
	if (d->conn_samples)
		d->conn_sample_us /= (double)d->conn_samples;
	doc_look_at_holders(d);
	doc_routes_back(d);
	doc_closes_end(d);
	if (d->dump_errors)
		fprintf(stderr, "socktune: doctor: %lld samples incomplete: %s\n", d->dump_errors,
		        d->dump_error);
	if (d->interrupted)
		fprintf(stderr, "socktune: doctor: interrupted (%s) after %.1f s of %.1f: the window "
		        "is short\n", stop_name(), d->elapsed_s, d->seconds);
	static struct doc_findings fs;
	doc_judge_all(d, DOC_IN_DOCTOR, &fs);
	if (d->json)
		doctor_print_json(stdout, d, &fs);
	else
		doctor_print_text(stdout, d, &fs);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "socktune: doctor: the report could not be written: %s\n",
		        strerror(errno));
		doctor_findings_free(&fs);
		return 3;
	}
	int status = doctor_status(&fs);
	doctor_findings_free(&fs);
	return status; /* (after a signal, main ends by it) */
}
