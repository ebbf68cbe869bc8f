/* Logging: logfmt lines prefixed "socktune pid=N level=L", each formatted into one buffer
 * and written with one write(2), to SOCKTUNE_LOG_FILE or stderr, never stdout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

int st_log_level = ST_LOG_INFO;
static const char *log_pattern; /* SOCKTUNE_LOG_FILE, or NULL for stderr */
static _Atomic int log_fd = -1;  /* -1: not opened yet */
static _Atomic long log_pid;     /* the pid the file was opened for (%p) */

static const char *const level_names[] = {"off", "error", "warn", "info", "debug"};

void st_log_init(const struct st_policy *p)
{
	if (st_has(p, ST_V_LOG))
		st_log_level = (int)p->num[ST_V_LOG];
	if (st_has(p, ST_V_LOG_FILE))
		log_pattern = p->log_file;
}

static void log_write(int fd, const char *buf, size_t len)
{
	/* A log line must never kill the server: block SIGPIPE for this thread while writing to
	 * a pipe whose reader is gone, and swallow the one we raised. */
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigset_t pending;
	sigpending(&pending);
	int was_pending = sigismember(&pending, SIGPIPE);

	int saved = errno;
	/* Never block the server for long on a full pipe or a stalled terminal: wait at most
	 * 100 ms for room.  A line is shorter than PIPE_BUF, so once poll() says there is room
	 * the write neither blocks nor interleaves with another. */
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	long r = -1;
	if (poll(&pfd, 1, 100) == 1 && (pfd.revents & POLLOUT))
		r = syscall(SYS_write, fd, buf, len);
	if (r < 0 && errno == EPIPE && !was_pending) {
		struct timespec zero = {0, 0};
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	errno = saved;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The log file's identity: the app may close our descriptor by a path the hooks do not
 * see (fclose(), closefrom() inside libc) and get the number back for a socket; a line must
 * never go there. */
static dev_t log_dev;
static ino_t log_ino;

static int still_ours(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == log_dev && st.st_ino == log_ino;
}

static int log_open(void)
{
	if (!log_pattern)
		return STDERR_FILENO;
	long pid = getpid();
	int fd = atomic_load(&log_fd);
	if (!still_ours(fd))
		fd = -1;
	else if (atomic_load(&log_pid) == pid || !strstr(log_pattern, "%p"))
		return fd;

	char path[sizeof st_policy.log_file + 24];
	int nfd = -1;
	if (st_expand_path(log_pattern, pid, path, sizeof path) == 0)
		nfd = (int)syscall(SYS_openat, AT_FDCWD, path,
		                   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
	struct stat st;
	if (nfd < 0 || fstat(nfd, &st) != 0) {
		char shown[256], why[128];
		st_sanitize(log_pattern, shown, sizeof shown);
		st_sanitize(strerror(errno), why, sizeof why);
		log_pattern = NULL; /* from now on: stderr */
		char line[768];
		int n = snprintf(line, sizeof line,
		                 "socktune pid=%ld level=warn event=log-file var=SOCKTUNE_LOG_FILE "
		                 "path=\"%s\" error=\"%s\" action=stderr\n",
		                 pid, shown, why);
		if (n > 0)
			log_write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
		return STDERR_FILENO;
	}
	/* Out of the app's way: a high number it is unlikely to dup2() onto or count on. */
	int high = fcntl(nfd, F_DUPFD_CLOEXEC, 512);
	if (high >= 0) {
		syscall(SYS_close, nfd);
		nfd = high;
	}
	log_dev = st.st_dev;
	log_ino = st.st_ino;
	atomic_store(&log_pid, pid);
	atomic_store(&log_fd, nfd);
	if (fd >= 0 && fd != nfd)
		syscall(SYS_close, fd); /* a forked child's copy of the parent's file */
	return nfd;
}

void st_log_fd_closed(unsigned first, unsigned last)
{
	int fd = atomic_load(&log_fd);
	if (fd >= 0 && (unsigned)fd >= first && (unsigned)fd <= last)
		atomic_compare_exchange_strong(&log_fd, &fd, -1);
}

void st_sanitize(const char *s, char *out, size_t n)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		out[i] = (s[i] == '"' || s[i] == '\\' || (unsigned char)s[i] < 0x20) ? '?' : s[i];
	if (n)
		out[i] = '\0';
}

void st_line_add(struct st_line *l, const char *fmt, ...)
{
	if (l->n >= sizeof l->b - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(l->b + l->n, sizeof l->b - l->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		l->n += (size_t)w < sizeof l->b - l->n ? (size_t)w : sizeof l->b - l->n - 1;
}

void st_log_line(int level, const char *fmt, ...)
{
	if (level > st_log_level || level <= ST_LOG_OFF)
		return;
	int saved = errno;
	struct st_line l = {.n = 0};
	st_line_add(&l, "socktune pid=%ld level=%s ", (long)getpid(), level_names[level]);
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(l.b + l.n, sizeof l.b - l.n - 1, fmt, ap);
	va_end(ap);
	if (w > 0)
		l.n += (size_t)w < sizeof l.b - l.n - 1 ? (size_t)w : sizeof l.b - l.n - 2;
	l.b[l.n++] = '\n';
	log_write(log_open(), l.b, l.n);
	errno = saved;
}

/* Configuration errors wait for the first governed socket. */
/* One line for each variable, and a few unknown ones; beyond that, one line says how many
 * more were dropped. */
#define ST_MAX_DEFERRED (ST_V_COUNT + 8)
static struct st_line deferred[ST_MAX_DEFERRED];
static int n_deferred, n_dropped;
static _Atomic int deferred_done;

void st_log_defer(const char *name, const char *value, const char *msg)
{
	if (n_deferred >= ST_MAX_DEFERRED) {
		n_dropped++;
		return;
	}
	char shown[201], var[64];
	st_sanitize(value, shown, sizeof shown); /* keep the line one logfmt line */
	st_sanitize(name, var, sizeof var);
	for (char *c = var; *c; c++)
		if (*c == ' ' || *c == '=')
			*c = '?';
	struct st_line *l = &deferred[n_deferred++];
	l->n = 0;
	st_line_add(l, "event=config var=%s value=\"%s\" error=\"%s\" action=ignored", var, shown,
	            msg);
}

void st_log_flush_deferred(void)
{
	if (atomic_exchange(&deferred_done, 1))
		return;
	for (int i = 0; i < n_deferred; i++)
		st_log(strstr(deferred[i].b, "unknown variable") ? ST_LOG_WARN : ST_LOG_ERROR, "%s",
		       deferred[i].b);
	if (n_dropped)
		st_log(ST_LOG_ERROR, "event=config more=%d action=ignored (not listed: too many)",
		       n_dropped);
}
