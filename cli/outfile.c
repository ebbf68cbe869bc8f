/* An output file replaced whole (stats --output, watch --textfile): a reader such as node_exporter's textfile
 * collector sees the old text or the new, never a half-written file.  The new text goes to
 * a file of our own in the same directory (rename() does not cross filesystems), made with
 * O_EXCL so that nothing already there is opened, written, fsynced, then renamed over the
 * path.  The path is the user's choice, but only a regular file (or nothing) is replaced: a
 * symlink, a FIFO, a device (--output /dev/stdout run as root would replace the device node)
 * or a directory is refused, and so is another user's file, and a file that does not begin
 * as this output does (run as root, --textfile /etc/passwd would replace it). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char *kind_of(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m)
	       ? "a character device" : S_ISBLK(m) ? "a block device" : S_ISDIR(m)
	       ? "a directory" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* What a failed write is: the errno's text, and its name for the ones an operator meets
 * (a full disk says ENOSPC at write, at fsync or at close). */
static const char *why(int e)
{
	static char buf[96];
	const char *name = e == ENOSPC ? " (ENOSPC)" : e == EDQUOT ? " (EDQUOT)" : e == EROFS
	                   ? " (EROFS)" : e == EACCES ? " (EACCES)" : e == EFBIG ? " (EFBIG)" : "";
	snprintf(buf, sizeof buf, "%s%s", strerror(e), name);
	return buf;
}

static int replace(const char *path, const char *tmp, int fd, const char *data, size_t n,
                   char *err, size_t errlen)
{
	const char *step = "write";
	int ok = write_all(fd, data, n) == 0 && (step = "fsync", fsync(fd) == 0);
	int e = errno;
	if (close(fd) != 0 && ok) {
		ok = 0;
		e = errno;
		step = "close";
	}
	if (ok && rename(tmp, path) != 0) {
		e = errno;
		snprintf(err, errlen, "rename %s to %s: %s", tmp, path, why(e));
		unlink(tmp);
		return -1;
	}
	if (!ok) {
		snprintf(err, errlen, "%s %s: %s (%s left as it was)", step, tmp, why(e), path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Whether the file at path is empty, absent, or begins with the same first MARK_LEN bytes as
 * the new text ("# HELP socktune_": a file this command wrote).  Root owns every file of
 * /etc: the owner alone does not tell a textfile from /etc/passwd. */
#define MARK_LEN 16
static int same_kind(const char *path, const char *data, size_t n)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT;
	struct stat st;
	char head[MARK_LEN];
	size_t want = n < MARK_LEN ? n : MARK_LEN;
	ssize_t got = 0;
	int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (ok && st.st_size > 0) {
		do
			got = read(fd, head, want);
		while (got < 0 && errno == EINTR);
		ok = got == (ssize_t)want && memcmp(head, data, want) == 0;
	}
	close(fd);
	return ok;
}

int write_atomic(const char *path, const char *data, size_t n, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is %s: not replaced (only a regular file is)", path,
		         kind_of(st.st_mode));
		return -1;
	}
	/* Another user's file is not ours to replace (root's rename would take it from them: a
	 * sticky /tmp, a directory shared with node_exporter). */
	if (lstat(path, &st) == 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %ld, not to this user (uid %ld): not replaced "
		         "(remove it, or give a path of this user's own)", path, (long)st.st_uid,
		         (long)geteuid());
		return -1;
	}
	if (!same_kind(path, data, n)) {
		snprintf(err, errlen, "%s does not begin as this output does (\"%.*s\"): not made by "
		         "socktune, not replaced (remove it, or give a path of socktune's own)", path,
		         (int)(n < MARK_LEN ? n : MARK_LEN), data);
		return -1;
	}
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	int dirlen = slash ? (int)(slash - path) + 1 : 0;
	if (*base == '\0') {
		snprintf(err, errlen, "%s: a file name, not a directory", path);
		return -1;
	}
	/* A dot name that does not end in .prom, so the textfile collector never reads it. */
	char tmp[PATH_MAX];
	int fd = -1;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (int i = 0; i < 8 && fd < 0; i++) {
		int len = snprintf(tmp, sizeof tmp, "%.*s.%s.tmp.%ld.%ld", dirlen, path, base,
		                   (long)getpid(), (now.tv_nsec + i) % 1000000);
		if (len < 0 || (size_t)len >= sizeof tmp) {
			snprintf(err, errlen, "%s: path too long", path);
			return -1;
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
		if (fd < 0 && errno != EEXIST) {
			snprintf(err, errlen, "create %s: %s", tmp, why(errno));
			return -1;
		}
	}
	if (fd < 0) {
		snprintf(err, errlen, "create %s: %s (8 names tried)", tmp, why(EEXIST));
		return -1;
	}
	/* A signal (an interrupted --watch, a file size limit) must not leave the new file
	 * behind: blocked until it is renamed or removed.  SIGXFSZ is ignored (not blocked: it
	 * would be delivered at the unblock), so a write past the limit fails with EFBIG. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	struct sigaction ign = {.sa_handler = SIG_IGN}, was;
	sigaction(SIGXFSZ, &ign, &was);
	int r = replace(path, tmp, fd, data, n, err, errlen);
	sigaction(SIGXFSZ, &was, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}
