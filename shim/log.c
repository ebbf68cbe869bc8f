/* Logging: logfmt lines prefixed "socktune pid=N level=L", each formatted into one buffer
 * and written with one write(2), to SOCKTUNE_LOG_FILE or stderr, never stdout, and never
 * into a socket: an inetd-style server's descriptor 2 is its client, and a server started
 * with stderr closed hands number 2 to its first connection. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"
#include "socktune_kernel.h"

int st_log_level = ST_LOG_INFO;
static const char *log_pattern; /* SOCKTUNE_LOG_FILE, or NULL for stderr; set once at init */
static int log_per_pid;         /* the pattern holds %p: a forked child opens its own file */

static const char *const level_names[] = {"off", "error", "warn", "info", "debug"};

/* What descriptor 2 was at init.  Closed, or a socket (an inetd-style service's client, a
 * peer that can read our lines): not usable, so no line ever goes there.  Otherwise each
 * line first checks that 2 is still that object: the app may close it and get the number
 * back for a connection.  Written once at init, read-only afterwards. */
static int err_usable;
static struct stat err_st;

static int same_object(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT) && a->st_rdev == b->st_rdev;
}

/* systemd connects a service's stderr to the journal through a unix socket and names that
 * socket, as "device:inode", in JOURNAL_STREAM (systemd.exec(5)); that socket alone takes
 * log lines. */
static int is_journal(const struct stat *st)
{
	const char *v = getenv("JOURNAL_STREAM");
	if (!v)
		return 0;
	char *end;
	errno = 0;
	unsigned long long dev = strtoull(v, &end, 10);
	if (errno || end == v || *end != ':')
		return 0;
	const char *i = end + 1;
	unsigned long long ino = strtoull(i, &end, 10);
	if (errno || end == i || *end)
		return 0;
	return (unsigned long long)st->st_dev == dev && (unsigned long long)st->st_ino == ino;
}

void st_log_init(const struct st_policy *p)
{
	if (st_has(p, ST_V_LOG))
		st_log_level = (int)p->num[ST_V_LOG];
	if (st_has(p, ST_V_LOG_FILE)) {
		log_pattern = p->log_file;
		log_per_pid = strstr(log_pattern, "%p") != NULL;
	}
	int saved = errno;
	struct stat st;
	if (fstat(STDERR_FILENO, &st) == 0 && (!S_ISSOCK(st.st_mode) || is_journal(&st))) {
		err_st = st;
		err_usable = 1;
	}
	errno = saved;
}

/* Descriptor 2 if it is still the stderr we saw at init, else -1 (the line is dropped). */
static int stderr_fd(void)
{
	struct stat st;
	if (!err_usable || fstat(STDERR_FILENO, &st) != 0 || !same_object(&st, &err_st))
		return -1;
	return STDERR_FILENO;
}

/* 0, or the errno of a failed write; a line dropped after 100 ms without room is not a
 * failure. */
static int log_write(int fd, const char *buf, size_t len)
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

	int saved = errno, err = 0;
	/* Never block the server for long on a full pipe or a stalled terminal: wait at most
	 * 100 ms for room.  A line is shorter than PIPE_BUF, so once poll() says there is room
	 * the write does not interleave with another, and does not block unless another writer
	 * fills the pipe between the two calls: the log file is ours and opened O_NONBLOCK, but
	 * stderr is the app's open file, whose blocking mode is not ours to change.  Any other
	 * answer (POLLERR of a pipe without reader, POLLNVAL) is left to write() to name. */
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	if (poll(&pfd, 1, 100) == 1 && syscall(SYS_write, fd, buf, len) < 0) {
		err = errno;
		if (err == EPIPE && !was_pending) {
			struct timespec zero = {0, 0};
			sigtimedwait(&pipe_set, NULL, &zero);
		}
	}
	errno = saved;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err == EAGAIN || err == EINTR ? 0 : err;
}

/* One warning about the log file, on stderr (if usable), with the path this process uses. */
static void log_file_warn(long pid, int err, const char *action)
{
	/* static, not on the stack (a hook may run on a small thread stack): this runs once
	 * per process and state, under the open's claim or the write warning's flag */
	static char path[sizeof st_policy.log_file + 24], shown[256], why[128], line[768];
	if (st_expand_path(log_pattern, pid, path, sizeof path) != 0)
		snprintf(path, sizeof path, "%s", log_pattern);
	st_sanitize(path, shown, sizeof shown);
	st_sanitize(err ? strerror(err) : "not a regular file, FIFO or character device", why,
	            sizeof why);
	int n = snprintf(line, sizeof line,
	                 "socktune pid=%ld level=warn event=log-file variable=SOCKTUNE_LOG_FILE "
	                 "path=\"%s\" error=\"%s\"%s action=%s\n",
	                 pid, shown, why,
	                 err == ENXIO ? " detail=\"a FIFO without a reader, or a socket\"" : "", action);
	int fd = stderr_fd();
	if (n > 0 && fd >= 0)
		log_write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The log file's state and the process it was opened for, in one word, so that a forked
 * child sees at once that its parent's file (or a thread of the parent opening it at the
 * moment of fork) is not its own: (pid << 2) | state. */
enum { LOG_NONE = 0, LOG_OPENING = 1, LOG_READY = 2, LOG_FAILED = 3 };
static _Atomic unsigned long long log_word;
_Atomic int st_log_fd = -1; /* the log file's descriptor, once open */
/* The file's identity: the app may close our descriptor by a path the hooks do not see
 * (fclose(), closefrom() inside libc) and get the number back for a socket; a line must
 * never go there. */
static _Atomic unsigned long long log_dev, log_ino;
static _Atomic int log_write_warned;

static int still_ours(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && (unsigned long long)st.st_dev == log_dev &&
	       (unsigned long long)st.st_ino == log_ino;
}

/* Called by the one thread that moved log_word to OPENING for this pid.  O_NONBLOCK: a
 * FIFO without a reader fails with ENXIO instead of blocking the hook forever, and a
 * FIFO with one never blocks a write (log_write waits for room itself). */
/* The descriptor slots the kernel has allocated for this process (FDSize in
 * /proc/self/status, a few lines from its top), or 0 when that cannot be read. */
static int fd_table_size(void)
{
	char buf[512];
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *f = strstr(buf, "\nFDSize:");
	return f ? atoi(f + 8) : 0;
}

/* Out of the app's way (a number it is unlikely to dup2() onto or count on), but inside
 * the descriptor table the process already has: the highest free slot below its size.
 * A number beyond it (F_DUPFD 512 in a 64-slot table) makes the kernel grow the table,
 * and with threads sharing it wait for an RCU grace period first: 12-20 ms inside the
 * listen() hook, the socket already listening (measured with 3 idle threads; Erlang's
 * inets, whose acceptor starts before its manager registers, answered the first request
 * with HTTP 500 in 35 of 35 fast starts, against 17 of 35 without the library).  F_DUPFD
 * never replaces a descriptor: if another thread takes the slot first, the copy gets the
 * next free number instead.  No free slot above nfd: nfd stays where it is. */
static int move_high(int nfd)
{
	int size = fd_table_size();
	if (size <= 0)
		size = 8 * (int)sizeof(long); /* the smallest table the kernel makes */
	/* F_DUPFD refuses numbers from RLIMIT_NOFILE up (valgrind keeps its own there) */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)size)
		size = (int)rl.rlim_cur;
	for (int n = size - 1, tries = 0; n > nfd && tries < 16; n--, tries++) {
		if (fcntl(n, F_GETFD) != -1 || errno != EBADF)
			continue; /* in use */
		int high = fcntl(nfd, F_DUPFD_CLOEXEC, n);
		if (high < 0)
			continue;
		syscall(SYS_close, nfd);
		return high;
	}
	return nfd;
}

/* (not inlined: its path buffer would be on the stack of every line) */
__attribute__((noinline)) static int log_file_open(long pid, int old, int *file)
{
	if (old >= 0 && !still_ours(old))
		old = -1; /* that number is the app's now */
	char path[sizeof st_policy.log_file + 24];
	int nfd = -1, err = ENAMETOOLONG;
	struct stat st;
	if (st_expand_path(log_pattern, pid, path, sizeof path) == 0) {
		nfd = (int)syscall(SYS_openat, AT_FDCWD, path,
		                   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
		                           O_NONBLOCK,
		                   0644);
		err = errno;
	}
	if (nfd >= 0 && fstat(nfd, &st) != 0) {
		err = errno;
		syscall(SYS_close, nfd);
		nfd = -1;
	} else if (nfd >= 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) &&
	           !S_ISCHR(st.st_mode)) {
		err = 0; /* a block device, say: not a log */
		syscall(SYS_close, nfd);
		nfd = -1;
	}
	if (nfd < 0) {
		log_file_warn(pid, err, "stderr");
		atomic_store(&log_word, ((unsigned long long)pid << 2) | LOG_FAILED);
		return stderr_fd();
	}
	nfd = move_high(nfd);
	atomic_store(&log_dev, (unsigned long long)st.st_dev);
	atomic_store(&log_ino, (unsigned long long)st.st_ino);
	atomic_store(&st_log_fd, nfd);
	atomic_store(&log_word, ((unsigned long long)pid << 2) | LOG_READY);
	if (old >= 0 && old != nfd)
		syscall(SYS_close, old); /* a forked child's copy of the parent's file */
	*file = 1;
	return nfd;
}

/* The descriptor for one line, -1 to drop it; *file: it is the log file.  The file is
 * opened once per process (or once, when forked children share it): one thread wins the
 * move to OPENING, the others wait for it a bounded time (a few syscalls), then drop. */
static int log_target(int *file)
{
	*file = 0;
	if (!log_pattern)
		return stderr_fd();
	long pid = getpid();
	for (int i = 0; i < 100000; i++) {
		unsigned long long w = atomic_load(&log_word);
		int state = (int)(w & 3);
		long owner = (long)(w >> 2);
		if (state == LOG_FAILED)
			return stderr_fd();
		if (state == LOG_READY && (owner == pid || !log_per_pid)) {
			int fd = atomic_load(&st_log_fd);
			if (still_ours(fd)) {
				*file = 1;
				return fd;
			}
		} else if (state == LOG_OPENING && owner == pid) {
			sched_yield();
			continue;
		}
		/* not opened yet, lost to the app, or a parent's (%p, or its claim at fork time) */
		int old = state == LOG_READY ? atomic_load(&st_log_fd) : -1;
		if (atomic_compare_exchange_strong(&log_word, &w, ((unsigned long long)pid << 2) |
		                                                          LOG_OPENING)) {
			return log_file_open(pid, old, file);
		}
	}
	return -1;
}

void st_log_fd_closed(unsigned first, unsigned last)
{
	int fd = atomic_load(&st_log_fd);
	/* a vfork child closes its own copy: the parent's descriptor stays the parent's */
	if (fd >= 0 && (unsigned)fd >= first && (unsigned)fd <= last && !st_in_vfork_child())
		atomic_compare_exchange_strong(&st_log_fd, &fd, -1);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0: a stray continuation byte, a
 * truncated sequence, an overlong form, a surrogate or a code point past U+10FFFF. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t len;
	unsigned lo = 0x80, hi = 0xbf; /* the range allowed for the second byte */
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* U+D800..U+DFFF */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* past U+10FFFF */
	} else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return len;
}

/* st_sanitize's copy; keep: quotes and backslashes stay (st_quote escapes them). */
static void sanitize(const char *s, char *out, size_t n, int keep)
{
	const unsigned char *in = (const unsigned char *)s;
	size_t i = 0, o = 0;
	while (in[i] && o + 1 < n) {
		unsigned c = in[i];
		if (c < 0x80) {
			out[o++] = ((!keep && (c == '"' || c == '\\')) || c < 0x20 || c == 0x7f) ? '?'
			                                                                   : (char)c;
			i++;
			continue;
		}
		size_t len = utf8_len(in + i);
		/* C1 controls (U+0080..U+009F) are control characters too */
		if (len == 0 || (len == 2 && c == 0xc2 && in[i + 1] < 0xa0)) {
			out[o++] = '?';
			i += len ? len : 1;
			continue;
		}
		if (o + len >= n)
			break; /* never half a character */
		/* o <= i throughout, so copying forward is safe when out is s */
		for (size_t k = 0; k < len; k++)
			out[o++] = (char)in[i++];
	}
	if (n)
		out[o] = '\0';
}

void st_sanitize(const char *s, char *out, size_t n)
{
	sanitize(s, out, n, 0);
}

void st_quote(const char *s, char *out, size_t n)
{
	st_quote_n(s, strlen(s), out, n);
}

void st_quote_n(const char *s, size_t len, char *out, size_t n)
{
	if (n < 3) {
		if (n)
			out[0] = '\0';
		return;
	}
	/* sanitized in place at the end of out, then escaped forward into its start: a
	 * value's worst case is twice its length, so the copy keeps at most (n - 3) / 2 bytes */
	size_t half = (n - 3) / 2;
	if (half > len)
		half = len;
	char *tmp = out + n - half - 1;
	sanitize(s, tmp, half + 1, 1);
	size_t o = 0;
	out[o++] = '"';
	for (const char *c = tmp; *c; c++) {
		if (*c == '"' || *c == '\\')
			out[o++] = '\\';
		out[o++] = *c;
	}
	out[o++] = '"';
	out[o] = '\0';
}

/* " key=" and s quoted, at out + *o (n bytes in all); nothing when it does not fit */
static void add_quoted(char *out, size_t n, size_t *o, const char *key, const char *s,
                       size_t len)
{
	size_t k = strlen(key);
	if (*o + k + 3 >= n)
		return;
	memcpy(out + *o, key, k);
	st_quote_n(s, len, out + *o + k, n - *o - k);
	*o += k + strlen(out + *o + k);
}

void st_fix_keys(const char *fix, char *out, size_t n)
{
	const char *note;
	size_t len = st_fix_command(fix, &note), o = 0; /* (st_fix_split's cut, without a copy) */
	if (n)
		out[0] = '\0';
	if (len)
		add_quoted(out, n, &o, " fix.0=", fix, len);
	if (*note)
		add_quoted(out, n, &o, " note=", note, strlen(note));
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

void st_line_outcome(struct st_line *l, int i, const struct st_outcome *o, const char *name)
{
	if (l->n < sizeof l->b - 1)
		l->n += st_outcome_keys(&st_policy, i, o, name, l->b + l->n, sizeof l->b - l->n);
}

/* A vfork() child runs in our memory until it execs: the log's state (which file, for
 * which pid) is the parent's, and must stay so.  The line goes to the parent's file if
 * this child still holds it (a copy of the parent's descriptor table, closed at exec), else
 * to a file opened for this line alone and closed again, else to stderr. */
/* (not inlined: its path buffer would be on the stack of every line) */
__attribute__((noinline)) static int log_target_borrowed(int *file, int *transient)
{
	*file = *transient = 0;
	if (!log_pattern)
		return stderr_fd();
	unsigned long long w = atomic_load(&log_word);
	int fd = atomic_load(&st_log_fd);
	if ((w & 3) == LOG_READY && still_ours(fd)) {
		*file = 1;
		return fd;
	}
	if ((w & 3) == LOG_FAILED)
		return stderr_fd();
	char path[sizeof st_policy.log_file + 24];
	if (st_expand_path(log_pattern, getpid(), path, sizeof path) != 0)
		return stderr_fd();
	fd = (int)syscall(SYS_openat, AT_FDCWD, path,
	                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
	                          O_NONBLOCK,
	                  0644);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 ||
	                (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)))) {
		syscall(SYS_close, fd);
		fd = -1;
	}
	if (fd < 0)
		return stderr_fd();
	*file = *transient = 1;
	return fd;
}

static void log_vline(int level, int borrowed, const char *fmt, va_list ap)
{
	if (level > st_log_level || level <= ST_LOG_OFF)
		return;
	int saved = errno;
	struct st_line l = {.n = 0};
	st_line_add(&l, "socktune pid=%ld level=%s ", (long)getpid(), level_names[level]);
	int w = vsnprintf(l.b + l.n, sizeof l.b - l.n - 1, fmt, ap);
	if (w > 0 && (size_t)w < sizeof l.b - l.n - 1) {
		l.n += (size_t)w;
	} else if (w > 0) {
		l.n = sizeof l.b - 2; /* cut: never in the middle of a UTF-8 character */
		for (size_t k = 0; k < 3 && ((unsigned char)l.b[l.n - 1] & 0xc0) == 0x80; k++)
			l.n--;
		if ((unsigned char)l.b[l.n - 1] >= 0xc0)
			l.n--;
	}
	l.b[l.n++] = '\n';
	int file, transient = 0;
	int fd = borrowed ? log_target_borrowed(&file, &transient) : log_target(&file);
	/* The first failed write to the file (ENOSPC of /dev/full, EIO, EPIPE of a FIFO whose
	 * reader left) is said once on stderr; the lines are lost, not moved. */
	int err = fd >= 0 ? log_write(fd, l.b, l.n) : 0;
	if (transient)
		syscall(SYS_close, fd);
	if (err && file && !atomic_exchange(&log_write_warned, 1))
		log_file_warn(getpid(), err, "dropped");
	errno = saved;
}

void st_log_line(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vline(level, 0, fmt, ap);
	va_end(ap);
}

void st_log_line_borrowed(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vline(level, 1, fmt, ap);
	va_end(ap);
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
	char why[160];
	st_sanitize(msg, why, sizeof why);
	st_line_add(l, "event=config variable=%s value=\"%s\" error=\"%s\" action=ignored", var, shown,
	            why);
}

void st_log_flush_deferred(void)
{
	if (atomic_exchange(&deferred_done, 1))
		return;
	for (int i = 0; i < n_deferred; i++)
		st_log(strstr(deferred[i].b, "unknown variable") ? ST_LOG_WARN : ST_LOG_ERROR, "%s",
		       deferred[i].b);
	if (n_dropped)
		st_log(ST_LOG_ERROR, "event=config not_listed=%d action=ignored",
		       n_dropped);
}
