/* socktune attach [OPTIONS] PID... | :PORT...: tune a server that is already running, in any
 * language, from outside.  pidfd_getfd(2) (Linux 5.6) takes a copy of each socket descriptor
 * of the target; an option set on the copy is set on the socket itself, and listen() on a
 * copy of a listener changes its backlog live.  The apply step is the library's own
 * (common/apply.c), the line per socket in the library's format.  The target is never
 * disturbed beyond the policy: no signal, no descriptor left behind, every copy closed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "socktune.h"
#include "socktune_apply.h"
#include "socktune_host.h"
#include "socktune_json.h"
#include "socktune_kernel.h"
#include "cli.h"


#define MAX_PIDS 256

/* (Sockets are reached through raw system calls, cli_raw_ops: the command may itself run
 * under a preloaded library.) */

static int get_int(int fd, int level, int optname)
{
	long long v;
	return probe_get_int(fd, level, optname, &v) == 0 ? (int)v : -1;
}

static void local_addr(int fd, char *out, size_t n, unsigned *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	char host[INET6_ADDRSTRLEN] = "?";
	memset(&ss, 0, sizeof ss);
	*port = 0;
	syscall(SYS_getsockname, fd, &ss, &len);
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		*port = ntohs(a->sin6_port);
		snprintf(out, n, "[%s]:%u", host, *port);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		*port = ntohs(a->sin_port);
		snprintf(out, n, "%s:%u", host, *port);
	}
}

/* A sysctl of the target's network namespace (its somaxconn, rmem_max cap what is set on its
 * sockets, not ours): read here when it is ours, else by a child that joins it (setns needs
 * CAP_SYS_ADMIN).  -1 when it cannot be read. */
long long target_sysctl(int pid, const char *name)
{
	char path[64];
	struct stat mine, theirs;
	snprintf(path, sizeof path, "/proc/%d/ns/net", pid);
	if (stat("/proc/self/ns/net", &mine) == 0 && stat(path, &theirs) == 0 &&
	    mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev)
		return st_sysctl_num(name, -1);
	int pipefd[2];
	if (pipe(pipefd) != 0)
		return -1;
	pid_t child = fork();
	if (child == 0) {
		long long v = -1;
		int ns = open(path, O_RDONLY | O_CLOEXEC);
		if (ns >= 0 && setns(ns, CLONE_NEWNET) == 0)
			v = st_sysctl_num(name, -1);
		ssize_t w = write(pipefd[1], &v, sizeof v);
		_exit(w == sizeof v ? 0 : 1);
	}
	close(pipefd[1]);
	long long v = -1;
	struct pollfd pf = {.fd = pipefd[0], .events = POLLIN};
	int ready = child > 0 && poll(&pf, 1, 2000) == 1;
	if (ready && read(pipefd[0], &v, sizeof v) != sizeof v)
		v = -1;
	close(pipefd[0]);
	if (child > 0 && !ready)
		kill(child, SIGKILL);
	if (child > 0)
		waitpid(child, NULL, 0);
	return v;
}

/* A limit as a clamp line shows it: the number, or "unknown" (not readable from here). */
static const char *limit_text(long long v, char *buf, size_t n)
{
	if (v < 0)
		snprintf(buf, n, "unknown (its network namespace is not readable from here)");
	else
		snprintf(buf, n, "%lld", v);
	return buf;
}

/* One line of the report: logfmt like the library's, or one JSON object. */
static void report(FILE *f, int json, int pid, int fd, const char *event, const char *addr,
                   const char *keys)
{
	if (!json) {
		fprintf(f, "socktune event=%s pid=%d fd=%d addr=%s%s\n", event, pid, fd, addr, keys);
		return;
	}
	fprintf(f, "{\"event\": \"%s\", \"pid\": %d, \"fd\": %d, \"addr\": ", event, pid, fd);
	st_json_str(f, addr);
	fprintf(f, ", \"keys\": ");
	st_json_str(f, keys[0] == ' ' ? keys + 1 : keys);
	fprintf(f, "}\n");
}

/* Why a target cannot be reached, and what to do. */
static void refuse(struct attach_state *t, int pid, const char *call, int err)
{
	if (t->following)
		return;
	const char *why = strerror(err), *fix = "";
	if (err == ESRCH)
		fix = "no such process here (or it lives in another pid namespace: attach from there)";
	else if (err == EPERM || err == EACCES)
		fix = "the same uid and a dumpable target, or CAP_SYS_PTRACE (a setuid, setcap or "
		      "prctl(PR_SET_DUMPABLE, 0) target needs CAP_SYS_PTRACE)";
	else if (err == ENOSYS)
		fix = "pidfd_open and pidfd_getfd need Linux 5.6 or later";
	fprintf(stderr, "socktune: attach %d: %s: %s: %s\n", pid, call, why, fix);
	t->refused++;
}

/* The set: a key is there, or is added (returns whether it was there).  Past its cap the
 * set stops growing and answers "there" (no socket is tuned twice; a new one may be missed). */
static int set_has(const struct ino_set *s, unsigned long long key)
{
	for (size_t k = 0, h = key * 0x9e3779b97f4a7c15ull; s->cap && k < s->cap; k++) {
		unsigned long long v = s->keys[(h + k) & (s->cap - 1)];
		if (v == key)
			return 1;
		if (!v)
			return 0;
	}
	return 0;
}

static int set_add(struct ino_set *s, unsigned long long key)
{
	if (set_has(s, key))
		return 1;
	if (2 * (s->n + 1) > s->cap) { /* keep it half empty: double and rehash */
		size_t cap = s->cap ? 2 * s->cap : 1024;
		if (cap > (1u << 24))
			return 1;
		unsigned long long *keys = calloc(cap, sizeof *keys);
		if (!keys)
			return 1;
		struct ino_set grown = {keys, cap, 0};
		for (size_t k = 0; k < s->cap; k++)
			if (s->keys[k])
				set_add(&grown, s->keys[k]);
		free(s->keys);
		*s = grown;
	}
	for (size_t k = 0, h = key * 0x9e3779b97f4a7c15ull;; k++) {
		unsigned long long *v = &s->keys[(h + k) & (s->cap - 1)];
		if (!*v) {
			*v = key;
			s->n++;
			return 0;
		}
	}
}

/* A descriptor of ours above 0-2: with the standard ones closed, a copy there would take
 * the messages written to stderr into the target's socket. */
static int above_std(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return high;
}

/* Tune one socket of the target, through the copy: a listener with the listener options and
 * the backlog; an established connection (with --connections) with what matters on one. */
static void tune_copy(const struct st_policy *p, const struct attach_args *a, int pid, int fd,
                      int copy, struct attach_state *t)
{
	int listening = get_int(copy, SOL_SOCKET, SO_ACCEPTCONN) == 1;
	if (!listening && !a->connections)
		return;
	char addr[INET6_ADDRSTRLEN + 10], keys[1024] = "";
	unsigned port;
	size_t o = 0;
	local_addr(copy, addr, sizeof addr, &port);
	if (st_has(p, ST_V_PORTS) && !st_port_in(p->ports, port))
		return;
	struct st_apply_req rq = {
		.p = p,
		.family = get_int(copy, SOL_SOCKET, SO_DOMAIN),
		.skip = ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY | (listening ? 0 : ST_O_LISTENER_ONLY),
		.dry = st_on(p, ST_V_DRY_RUN),
	};
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		struct st_outcome out;
		char name[ST_NAME_MAX] = "", fix[200] = "";
		if (!st_apply_one(&cli_raw_ops, copy, &rq, i, &out, name))
			continue;
		if (out.state == ST_FAILED) {
			st_fix_refused(i, out.err, fix, sizeof fix);
			fprintf(stderr, "socktune: attach %d: fd %d: setsockopt %s: %s%s%s\n", pid, fd,
			        st_sockopts[i].label, strerror(out.err), *fix ? ": " : "", fix);
			t->refused++;
			continue;
		}
		o += (size_t)st_outcome_keys(p, i, &out, name, keys + o, sizeof keys - o);
		if (o >= sizeof keys)
			o = sizeof keys - 1;
		if (!rq.dry && out.got != ST_UNREAD && (st_sockopts[i].flags & ST_O_BUFFER) &&
		    st_short_of(i, out.want, out.got)) {
			/* the copy is set by this process: its capabilities decide */
			st_fix_limit(i, out.want, st_cap_effective(ST_CAP_NET_ADMIN),
			             i == ST_V_RCVBUF && st_on(p, ST_V_RCVBUF_FORCE), fix, sizeof fix);
			char lim[80];
			fprintf(stderr, "socktune: attach %d: fd %d: %s clamped to %d by the target's "
			        "%s=%s: %s\n", pid, fd, st_sockopts[i].label, out.got, st_sockopts[i].limit,
			        limit_text(target_sysctl(pid, st_sockopts[i].limit), lim, sizeof lim), fix);
		}
	}
	if (listening && st_backlog_governed(p)) {
		int before = st_listen_backlog(&cli_raw_ops, copy);
		int want = st_backlog_want(p, before);
		if (!rq.dry && want != before)
			syscall(SYS_listen, copy, want);
		int after = st_listen_backlog(&cli_raw_ops, copy);
		/* a dry run: effective is what the target's somaxconn would leave of want */
		o += (size_t)snprintf(keys + o, sizeof keys - o,
		                      " backlog.before=%d backlog.want=%d backlog.effective=%lld", before,
		                      want, rq.dry ? st_dry_backlog(want, target_sysctl(pid,
		                      "net.core.somaxconn")) : after);
		if (!rq.dry && after < want) {
			char fix[96], lim[80];
			st_fix_somaxconn(want, fix, sizeof fix);
			fprintf(stderr, "socktune: attach %d: fd %d: backlog clamped to %d by the target's "
			        "net.core.somaxconn=%s: %s (in its network namespace: nsenter "
			        "--net=/proc/%d/ns/net)\n", pid, fd, after,
			        limit_text(target_sysctl(pid, "net.core.somaxconn"), lim, sizeof lim), fix,
			        pid);
		}
	}
	if (!listening && st_on(p, ST_V_QUICKACK))
		o += (size_t)snprintf(keys + o, sizeof keys - o, " quickack=in-process-only");
	if (o >= sizeof keys)
		keys[sizeof keys - 1] = '\0';
	report(t->out, a->json, pid, fd, listening ? "attach" : "attach-connection", addr, keys);
	t->tuned++;
}

/* The target of pid, its pidfd opened once: a later pass of --follow reaches the same
 * process even when the number has been reused meanwhile (pidfd_getfd then says ESRCH). */
static struct attach_target *target_of(struct attach_state *t, int pid)
{
	struct attach_target *free_slot = NULL;
	for (int k = 0; k < t->ntargets; k++) {
		if (t->targets[k].pidfd >= 0 && t->targets[k].pid == pid)
			return &t->targets[k];
		if (t->targets[k].pidfd < 0 && !free_slot)
			free_slot = &t->targets[k];
	}
	if (!free_slot && t->ntargets < ATTACH_MAX_PIDS)
		free_slot = &t->targets[t->ntargets++];
	if (!free_slot)
		return NULL;
	int pfd = above_std((int)syscall(SYS_pidfd_open, pid, 0));
	if (pfd < 0) {
		refuse(t, pid, "pidfd_open", errno);
		return NULL;
	}
	*free_slot = (struct attach_target){.pid = pid, .pidfd = pfd};
	return free_slot;
}

/* Every socket descriptor of pid: a copy each, tuned, closed.  A socket is handled once
 * (tuned, or known never to be: not TCP, a connection without --connections); a socket not
 * listening yet is looked at again by the next pass. */
void attach_pid(const struct st_policy *p, const struct attach_args *a, int pid,
                struct attach_state *t)
{
	struct attach_target *tg = target_of(t, pid);
	if (!tg || tg->gone)
		return;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", pid);
	DIR *d = opendir(path);
	if (!d) {
		refuse(t, pid, "/proc/PID/fd", errno);
		return;
	}
	int entries = 0;
	for (struct dirent *e; (e = readdir(d)) && entries < 1 << 20; entries++) {
		char *end, link[64], lpath[96];
		long fd = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name)
			continue;
		snprintf(lpath, sizeof lpath, "/proc/%d/fd/%ld", pid, fd);
		ssize_t n = readlink(lpath, link, sizeof link - 1);
		unsigned long ino;
		if (n <= 0)
			continue;
		link[n] = '\0';
		unsigned long long holder = (unsigned long long)pid << 40;
		if (sscanf(link, "socket:[%lu]", &ino) != 1 ||
		    (set_has(&t->done, ino) && set_has(&t->holders, holder ^ ino)))
			continue; /* (no syscall for a socket handled already) */
		int copy = above_std((int)syscall(SYS_pidfd_getfd, tg->pidfd, (int)fd, 0));
		if (copy < 0) {
			if (errno == EBADF)
				continue; /* closed meanwhile */
			refuse(t, pid, "pidfd_getfd", errno);
			break;
		}
		struct stat sb; /* the socket the copy is: the number may name another one now */
		if (fstat(copy, &sb) == 0)
			ino = (unsigned long)sb.st_ino;
		int domain = get_int(copy, SOL_SOCKET, SO_DOMAIN);
		int proto = get_int(copy, SOL_SOCKET, SO_PROTOCOL);
		int tcp = (domain == AF_INET || domain == AF_INET6) &&
		          (proto == IPPROTO_TCP || proto == 262 /* MPTCP */);
		int listening = tcp && get_int(copy, SOL_SOCKET, SO_ACCEPTCONN) == 1;
		struct tcp_info ti;
		socklen_t tl = sizeof ti;
		memset(&ti, 0, sizeof ti);
		int unbound = tcp && !listening && probe_get(copy, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 &&
		              ti.tcpi_state == TCP_CLOSE; /* may listen later: looked at again */
		if (listening && set_has(&t->done, ino)) {
			if (!set_add(&t->holders, holder ^ ino)) { /* another holder: a prefork worker */
				char addr[INET6_ADDRSTRLEN + 10];
				unsigned port;
				local_addr(copy, addr, sizeof addr, &port);
				report(t->out, a->json, pid, (int)fd, "attach-shared", addr, "");
			}
		} else if (!unbound) {
			if (listening || (tcp && a->connections))
				tune_copy(p, a, pid, (int)fd, copy, t);
			set_add(&t->done, ino);
			set_add(&t->holders, holder ^ ino);
		}
		close(copy);
	}
	closedir(d);
}

int attach_alive(struct attach_state *t)
{
	int alive = 0;
	for (int k = 0; k < t->ntargets; k++) {
		struct attach_target *tg = &t->targets[k];
		if (tg->pidfd < 0 || tg->gone)
			continue;
		struct pollfd pf = {.fd = tg->pidfd, .events = POLLIN};
		if (poll(&pf, 1, 0) == 1) { /* a pidfd is readable once its process has exited */
			fprintf(stderr, "socktune: attach %d: exited\n", tg->pid);
			tg->gone = 1;
			close(tg->pidfd);
			tg->pidfd = -1; /* the slot is free again */
			continue;
		}
		alive++;
	}
	return alive;
}

/* :PORT: the processes holding a TCP listener on that port (in this network namespace). */
static int pids_of_port(unsigned port, int *pids, int max)
{
	unsigned long inos[64];
	int ninos = 0, n = 0;
	static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	for (size_t k = 0; k < 2; k++) {
		FILE *f = fopen(tables[k], "re");
		char line[512];
		for (int lines = 0; f && lines < 1000000 && fgets(line, sizeof line, f); lines++) {
			unsigned lport, state;
			unsigned long ino;
			if (sscanf(line, " %*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*s %*s %*s %*d %*d %lu",
			           &lport, &state, &ino) == 3 &&
			    lport == port && state == 0x0A && ninos < 64)
				inos[ninos++] = ino;
		}
		if (f)
			fclose(f);
	}
	DIR *proc = opendir("/proc");
	for (struct dirent *e; proc && ninos && (e = readdir(proc)) && n < max;) {
		char *end, path[300];
		long pid = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/fd", pid);
		DIR *d = opendir(path);
		int found = 0;
		for (struct dirent *f; d && !found && (f = readdir(d));) {
			char link[64], lpath[sizeof path + 260];
			unsigned long ino;
			snprintf(lpath, sizeof lpath, "%s/%s", path, f->d_name);
			ssize_t len = readlink(lpath, link, sizeof link - 1);
			if (len <= 0)
				continue;
			link[len] = '\0';
			if (sscanf(link, "socket:[%lu]", &ino) == 1)
				for (int k = 0; k < ninos; k++)
					found |= inos[k] == ino;
		}
		if (d)
			closedir(d);
		if (found)
			pids[n++] = (int)pid;
	}
	if (proc)
		closedir(proc);
	return n;
}

int attach_main(const struct attach_args *a, const struct st_policy *p)
{
	static struct attach_state t;
	t.out = stdout;
	signal(SIGPIPE, SIG_IGN); /* a closed pipe on stdout is an error said at the end, not death */
	int targets = 0;
	for (int k = 0; a->targets[k]; k++) {
		const char *s = a->targets[k];
		char *end;
		if (s[0] == ':') {
			long port = strtol(s + 1, &end, 10);
			if (*end || end == s + 1 || port < 1 || port > 65535) {
				fprintf(stderr, "socktune: attach %s: not a port (:1 to :65535)\n", s);
				return EXIT_USAGE;
			}
			int pids[MAX_PIDS], n = pids_of_port((unsigned)port, pids, MAX_PIDS);
			if (n == 0) {
				fprintf(stderr, "socktune: attach %s: no process here holds a TCP listener "
				        "on port %ld that this user may see\n", s, port);
				t.refused++;
			}
			for (int i = 0; i < n; i++, targets++)
				attach_pid(p, a, pids[i], &t);
			continue;
		}
		long pid = strtol(s, &end, 10);
		if (*end || end == s || pid < 1 || pid > INT_MAX) {
			fprintf(stderr, "socktune: attach %s: not a pid or :PORT\n", s);
			return EXIT_USAGE;
		}
		attach_pid(p, a, (int)pid, &t);
		targets++;
	}
	/* --follow: the same pass again every 100 ms over the processes reached (sockets
	 * handled already cost no syscall), until all have exited or a signal ends us */
	t.following = 1;
	while (a->follow && attach_alive(&t) > 0) {
		fflush(stdout);
		usleep(100000);
		for (int i = 0; i < t.ntargets; i++)
			if (t.targets[i].pidfd >= 0 && !t.targets[i].gone)
				attach_pid(p, a, t.targets[i].pid, &t);
	}
	if (fflush(stdout) != 0)
		return 1;
	/* 0: something tuned and nothing refused; 1: some refused; 3: nothing tuned */
	return t.tuned == 0 ? 3 : t.refused ? 1 : 0;
}
