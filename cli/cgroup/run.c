/* socktune --cgroup [OPTIONS] -- PROGRAM: the program in a cgroup of its own, the policy's
 * sock_ops program attached there before it starts, so that the kernel tunes each of its
 * connections (accepted, and outgoing with --client) from the first one, in any language,
 * without a preload or a pass from outside.
 *
 * In order: what a killed wrapper left is swept (cli/host/owned.c), the programs are loaded
 * (a refusal leaves nothing), the cgroup made (under the wrapper's own, socktune-PID, or
 * --cgroup-path), the programs written down and attached (BPF_PROG_ATTACH: they stay if the
 * wrapper is killed, and the server stays tuned), a probe connection in the cgroup read
 * back; then the program's process, forked, moves itself into the cgroup, says so, waits for
 * the go and execs.  The wrapper stays as its parent (the subreaper of what it leaves): it
 * forwards signals, reaps, follows what the program leaves (a daemon) until the last exits,
 * then detaches the programs, removes the cgroup (the last wrapper out, when several share
 * it) and its record, and ends with the program's status or signal. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_apply.h"
#include "cgroup/cgroup.h"
#include "host/clock.h"
#include "host/service.h"
#include "host/owned.h"

#define REMOVE_WAIT_MS 2000 /* for the processes the program left in its cgroup */

struct cg_state {
	char dir[4096];
	int made, cgroup_fd;
	int loaded, attached;    /* g holds the programs; they are attached to cgroup_fd */
	struct cg_progs g;       /* the sock_ops program and the setsockopt hook */
	unsigned long long said[ST_O_COUNT][2]; /* the hook's counts said (tick) */
	struct own_rec rec;      /* the record of what is attached (owned.h) */
	int recorded;
};

/* Another wrapper alive in the same cgroup (a shared --cgroup-path): its pid, or 0.  The one
 * that made the cgroup leaves it to that one, which removes it when it is the last out. */
static int other_user(struct cg_state *s)
{
	struct own_rec *v;
	int n = own_read_all(&v), other = 0;
	for (int k = 0; k < n && !other; k++)
		if (strcmp(v[k].kind, "run") == 0 && s->rec.cgroup_id && v[k].cgroup_id == s->rec.cgroup_id &&
		    strcmp(v[k].file, s->rec.file) != 0 && own_alive(&v[k])) {
			other = v[k].pid;
			if (s->made && !v[k].made) {
				char err[300];
				v[k].made = 1; /* (the last one out removes it) */
				own_write(&v[k], err, sizeof err);
			}
		}
	for (int k = 0; k < n && !s->made; k++) /* (made by one gone before us: ours to remove) */
		s->made = strcmp(v[k].file, s->rec.file) == 0 && v[k].made == 1;
	free(v);
	return other;
}

/* Detach (the sock_ops program, then the hook), unload, and remove the cgroup made: nothing
 * of ours is left. */
static void undo(struct cg_state *s)
{
	if (s->attached && cg_progs_detach(&s->g, s->cgroup_fd) != 0)
		fprintf(stderr, "socktune: --cgroup: detaching from %s: %s\n", s->dir, strerror(errno));
	if (s->loaded)
		cg_progs_close(&s->g);
	if (s->cgroup_fd >= 0)
		close(s->cgroup_fd);
	s->cgroup_fd = -1;
	s->attached = s->loaded = 0;
	char err[400];
	int lock = s->recorded ? own_lock() : -1; /* (a wrapper sharing the cgroup decides too) */
	int other = s->recorded ? other_user(s) : 0;
	if (other)
		fprintf(stderr, "socktune: --cgroup: %s kept: socktune --cgroup (pid %d) runs in it too "
		        "(the last one out removes it)\n", s->dir, other);
	else if (s->made && cg_remove(s->dir, REMOVE_WAIT_MS, err, sizeof err) != 0)
		fprintf(stderr, "socktune: --cgroup: %s\n", err);
	if (s->recorded && (other || !s->made || !own_populated(s->dir)))
		own_remove(&s->rec); /* (else kept: a later run removes the cgroup once empty) */
	own_unlock(lock);
	s->recorded = 0;
	s->made = 0;
}

static int setup(const struct cli *c, const struct st_policy *p, struct cg_state *s)
{
	static struct host h;
	char err[1024];
	read_host(&h);
	own_sweep(stderr, "--cgroup"); /* (what a wrapper killed before left) */
	if (cg_progs_load(p, st_on(p, ST_V_CLIENT), h.hz, c->peer, c->npeers, &s->g, err,
	                  sizeof err) != 0) {
		fprintf(stderr, "socktune: --cgroup: %s\n", err);
		return -1;
	}
	s->loaded = 1;
	if (s->g.hook_fd < 0 && s->g.hook_why[0])
		fprintf(stderr, "socktune: --cgroup: the program's own setsockopt is not held (%s): a "
		        "server that sets an option back on each connection (TCP_NODELAY=0, as hyper "
		        "and Erlang's inets do) undoes the policy there; the preload holds it "
		        "(socktune --nodelay PROGRAM, the same options without --cgroup)\n",
		        s->g.hook_why);
	if (c->cgroup_path) {
		cg_path_norm(c->cgroup_path, s->dir, sizeof s->dir);
	} else {
		char own[4000];
		if (cg_own_dir(own, sizeof own, err, sizeof err) != 0) {
			fprintf(stderr, "socktune: --cgroup: %s\n", err);
			return -1;
		}
		snprintf(s->dir, sizeof s->dir, "%s/socktune-%ld", own, (long)getpid());
	}
	if (c->cgroup_path && cg_is_root(s->dir)) { /* (by identity: any mount of cgroup2) */
		fprintf(stderr, "socktune: --cgroup: --cgroup-path %s is the root cgroup, the whole host: "
		        "give a cgroup of the program's own (or leave --cgroup-path out)\n", s->dir);
		return -1;
	}
	/* on record before the cgroup is made and the programs attached: what a SIGKILL leaves
	 * at any moment, a later run knows as ours (made 2: about to make it) */
	struct stat st;
	const int fds[2] = {s->g.ops_fd, s->g.hook_fd};
	const int types[2] = {OWN_AT_SOCK_OPS, OWN_AT_SETSOCKOPT};
	int absent = stat(s->dir, &st) != 0 && errno == ENOENT;
	if (own_rec_fill(&s->rec, "run", s->dir, 0, absent ? 2 : 0, fds, types, 2) != 0) {
		fprintf(stderr, "socktune: --cgroup: %s\n", strerror(errno));
		return -1;
	}
	cg_progs_held_keys(&s->g, s->rec.held, sizeof s->rec.held);
	if (own_write(&s->rec, err, sizeof err) != 0) {
		fprintf(stderr, "socktune: --cgroup: the record of the programs could not be written (%s): "
		        "not attached (without it, a later run could not tell them from another "
		        "party's)\n", err);
		return -1;
	}
	s->recorded = 1;
	if (cg_make(s->dir, &s->made, err, sizeof err) != 0) {
		fprintf(stderr, "socktune: --cgroup: %s\n", err);
		return -1;
	}
	s->cgroup_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->cgroup_fd < 0 || fstat(s->cgroup_fd, &st) != 0) {
		fprintf(stderr, "socktune: --cgroup: %s: %s\n", s->dir, strerror(errno));
		return -1;
	}
	s->rec.cgroup_id = (unsigned long long)st.st_ino;
	s->rec.made = s->made;
	if (own_write(&s->rec, err, sizeof err) != 0) {
		fprintf(stderr, "socktune: --cgroup: the record of the programs could not be written (%s): "
		        "not attached\n", err);
		return -1;
	}
	if (cg_progs_attach(&s->g, s->cgroup_fd, err, sizeof err) != 0) {
		fprintf(stderr, "socktune: --cgroup: %s: %s\n", s->dir, err);
		return -1;
	}
	s->attached = 1;
	cg_app_follow(s->g.mark_fd); /* (tick() reads the program's own connections) */
	return cg_readback(s->dir, p, st_on(p, ST_V_CLIENT), &h, s->g.insns, s->g.ops_id, c->peer,
	                   c->npeers) == 0
	               ? 0 : -1;
}

/* The program's process: into the cgroup, said up `said`, the go awaited on `go`, exec. */
static void child(const struct cli *c, const char *dir, int said, int go, const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
	int e = cg_enter(dir) == 0 ? 0 : errno;
	if (write(said, &e, sizeof e) != sizeof e || e)
		_exit(126);
	char b;
	if (read(go, &b, 1) != 1) /* the wrapper went: nothing to run in */
		_exit(126);
	for (int i = 0; i < ST_V_COUNT; i++) /* (the program is not preloaded: they mean nothing) */
		if (c->given[i])
			unsetenv(st_vars[i].env);
	execvp(c->program[0], c->program);
	e = errno;
	fprintf(stderr, "socktune: %s: %s\n", c->program[0],
	        e == ENOENT ? "command not found" : strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

/* What the wrapper does now and then while the program runs, every TICK_MS, and once more
 * at its end (final). */
#define TICK_MS 250
static void tick(struct cg_state *s, const struct cli *c, const struct st_policy *p, int final)
{
	(void)c;
	cg_progs_tell(&s->g, p, st_on(p, ST_V_CLIENT), s->dir, s->said, final);
	cg_app_readback(final); /* the program's own first connections, read back once */
}

/* The processes the program left when it exited (a daemon, a helper that ends later), ours
 * now as the subreaper: said in one line; 0 when none. */
static int left_behind(const struct cli *c, const struct cg_state *s, pid_t pid)
{
	struct svc_pids left = {0};
	svc_children(getpid(), &left);
	if (left.n) {
		char list[160];
		svc_pids_text(&left, list, sizeof list);
		fprintf(stderr, "socktune: --cgroup: %s (pid %d) exited and left %zu process%s in %s "
		        "(%s): the program stays attached, tuning their connections, until the last "
		        "exits (signals to socktune go to them)\n", c->program[0], pid, left.n,
		        left.n == 1 ? "" : "es", s->dir, list);
	}
	int n = (int)left.n;
	free(left.v);
	return n;
}

/* The wrapper's wait: signals passed on (to the program; once it has exited, to what it
 * left), the children reaped, tick() every TICK_MS.  The program's end ends it unless it
 * left processes behind (a daemon): then the last of them does.  The program's status,
 * after the undo. */
static int wait_program(const struct cli *c, const struct st_policy *p, struct cg_state *s,
                        pid_t pid, const sigset_t *set)
{
	int alive = 1, status = 0, following = 0;
	/* --backlog (listen()'s argument, out of the sock_ops program's reach): the attach
	 * mode's listener pass over the program and what it leaves, every ATTACH_PASS_MS, the
	 * backlog alone; tick() keeps to about its TICK_MS */
	struct attach_pass *pass = st_backlog_governed(p) ? attach_pass_open(p, "--cgroup", 1) : NULL;
	if (pass)
		attach_pass_run(pass, pid);
	/* on the clock, whatever signals come (a stream of SIGCHLD from orphans reparented here
	 * would otherwise keep both from running) */
	long long next_pass = clock_mono_ms() + ATTACH_PASS_MS, next_tick = clock_mono_ms() + TICK_MS;
	for (;;) {
		long long now = clock_mono_ms();
		if (pass && now >= next_pass) {
			attach_pass_run(pass, pid);
			next_pass = now + ATTACH_PASS_MS;
		}
		if (now >= next_tick) {
			tick(s, c, p, 0);
			next_tick = now + TICK_MS;
		}
		long long due = pass && next_pass < next_tick ? next_pass : next_tick;
		now = clock_mono_ms();
		struct timespec wait = {0, due > now ? (due - now) * 1000 * 1000L : 0};
		siginfo_t info;
		int sig = sigtimedwait(set, &info, &wait);
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) { /* (child.c, as --attach does) */
			if (child_sig_done(&info, pid, alive))
				continue;
			if (alive) {
				child_sig_pass(&info, pid);
			} else {
				struct svc_pids to = {0};
				svc_children(getpid(), &to);
				for (size_t k = 0; k < to.n; k++)
					child_sig_pass(&info, to.v[k]);
				free(to.v);
			}
			continue;
		}
		int st;
		pid_t r;
		while ((r = waitpid(-1, &st, WNOHANG)) > 0)
			if (r == pid) {
				alive = 0;
				status = st;
			} else if (following) {
				status = st; /* (the last of them: its status is ours) */
			}
		if (alive)
			continue;
		if (r < 0 && errno == ECHILD)
			break;
		if (!following)
			following = left_behind(c, s, pid) > 0;
		if (!following)
			break;
	}
	tick(s, c, p, 1);
	attach_pass_close(pass); /* (its last lines said) */
	undo(s);
	return child_status(status);
}

int cgroup_main(const struct cli *c, const struct st_policy *p)
{
	if (!c->program) {
		usage_error(stderr, "--cgroup: no program to run");
		return EXIT_USAGE;
	}
	if (st_on(p, ST_V_DISABLE)) {
		fprintf(stderr, "socktune: --cgroup: SOCKTUNE_DISABLE=1 (--disable): %s runs untuned\n",
		        c->program[0]);
		fflush(NULL);
		execvp(c->program[0], c->program);
		fprintf(stderr, "socktune: %s: %s\n", c->program[0], strerror(errno));
		return errno == ENOENT ? 127 : 126;
	}
	/* Blocked from before the cgroup is made: a SIGTERM while it is set up (the probe takes
	 * a while) would end us with the directory left behind, and the probe's process in it.
	 * One that came meanwhile ends us once it is undone, before the program starts. */
	sigset_t set, old;
	child_sigset(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	struct sigaction chld_was, dfl = {.sa_handler = SIG_DFL};
	sigaction(SIGCHLD, &dfl, &chld_was);
	struct cg_state s = {.cgroup_fd = -1};
	if (setup(c, p, &s) != 0) {
		undo(&s);
		return EXIT_USAGE;
	}
	/* A signal to end that came while it was set up (^C from the terminal: for no one else
	 * to pass it to, the program not being there yet): nothing is started, nothing left. */
	sigset_t pend;
	static const int ending[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t k = 0; sigpending(&pend) == 0 && k < sizeof ending / sizeof ending[0]; k++)
		if (sigismember(&pend, ending[k])) {
			fprintf(stderr, "socktune: --cgroup: %s while it was set up: %s not started\n",
			        strsignal(ending[k]), c->program[0]);
			undo(&s);
			fflush(NULL);
			signal(ending[k], SIG_DFL);
			sigset_t one;
			sigemptyset(&one);
			sigaddset(&one, ending[k]);
			sigprocmask(SIG_UNBLOCK, &one, NULL); /* (ends here, by that signal) */
			return 128 + ending[k];
		}
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); /* what the program leaves is reaped here */
	int said[2], go[2];
	if (pipe2(said, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) {
		fprintf(stderr, "socktune: --cgroup: pipe: %s\n", strerror(errno));
		undo(&s);
		return 126;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "socktune: --cgroup: fork: %s\n", strerror(errno));
		undo(&s);
		return 126;
	}
	if (pid == 0) {
		sigaction(SIGCHLD, &chld_was, NULL);
		close(said[0]);
		close(go[1]);
		child(c, s.dir, said[1], go[0], &old);
	}
	close(said[1]);
	close(go[0]);
	int e = -1;
	struct pollfd pf = {.fd = said[0], .events = POLLIN};
	if (poll(&pf, 1, 5000) == 1 && read(said[0], &e, sizeof e) != sizeof e)
		e = -1;
	close(said[0]);
	if (e != 0) {
		fprintf(stderr, "socktune: --cgroup: %s could not move into %s (%s): not started\n",
		        c->program[0], s.dir, e > 0 ? strerror(e) : "no word in 5 s");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		undo(&s);
		return 126;
	}
	signal(SIGPIPE, SIG_IGN);
	if (write(go[1], "g", 1) != 1) {
		kill(pid, SIGKILL);
	}
	close(go[1]);
	return wait_program(c, p, &s, pid, &set);
}
