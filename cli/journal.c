/* The journal of watch --apply: every change one JSON line (what, why, before, after, when,
 * which process, descriptor and address), appended to a file the command made itself, each
 * line in one write(2) and fsync'd before watch goes on, so a crash never leaves a change
 * unrecorded.  The path is checked before it is opened: a symlink, a FIFO (a reader could
 * stall every write), a device or a file some other program wrote is never written into.
 * socktune revert reads it back here, and appends its own lines: the file is only ever
 * appended to, never rewritten. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_json.h"
#include "journal.h"

#define FIRST_EVENT "journal" /* the event of the first line: this command made the file */
#define LINE_MAX_LEN 8192

const char *journal_default(char *buf, size_t n)
{
	const char *s = getenv("STATE_DIRECTORY");
	if (s && s[0] == '/') {
		size_t len = strcspn(s, ":");
		snprintf(buf, n, "%.*s/journal.jsonl", (int)len, s);
	} else {
		snprintf(buf, n, "/var/lib/socktune/journal.jsonl");
	}
	return buf;
}

/* A journal that another user could have written is not acted on: revert changes the
 * sockets it names.  Its owner is this user or root, and only the owner may write it. */
static int trusted(const struct stat *sb, const char *path, char *err, size_t n)
{
	if ((sb->st_uid != geteuid() && sb->st_uid != 0) || (sb->st_mode & 022)) {
		snprintf(err, n, "journal %s: owned by uid %u, mode %03o: refused (only its owner, "
		         "this user or root, may write a journal)", path, (unsigned)sb->st_uid,
		         (unsigned)(sb->st_mode & 0777));
		return 0;
	}
	return 1;
}

static const char *kind_of(mode_t m)
{
	return S_ISLNK(m) ? "a symlink" : S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory"
	       : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) || S_ISBLK(m) ? "a device"
	       : "not a regular file";
}

int journal_field(const char *line, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key);
	if (!n)
		return 0;
	for (const char *p = strchr(line, '"'); p; p = strchr(p + 1, '"')) {
		/* a key: quoted, not inside a string (preceded by '{', ',' or a space) */
		if (p != line && p[-1] != '{' && p[-1] != ' ' && p[-1] != ',')
			continue;
		if (strncmp(p + 1, key, kl) != 0 || p[1 + kl] != '"')
			continue;
		const char *v = p + 2 + kl;
		while (*v == ' ')
			v++;
		if (*v++ != ':')
			continue;
		while (*v == ' ')
			v++;
		size_t k = 0;
		if (*v == '"') {
			for (v++; *v && *v != '"'; v++) {
				if (*v == '\\' && v[1])
					v++;
				if (k + 1 < n)
					out[k++] = *v;
			}
			if (*v != '"')
				return 0;
		} else {
			for (; *v && *v != ',' && *v != '}' && *v != ' '; v++)
				if (k + 1 < n)
					out[k++] = *v;
			if (!k)
				return 0;
		}
		out[k] = '\0';
		return 1;
	}
	return 0;
}

/* The first line of the file behind fd is a journal's */
static int ours(int fd)
{
	char line[512], ev[32];
	ssize_t r = pread(fd, line, sizeof line - 1, 0);
	if (r <= 0)
		return r == 0; /* (empty: made and not written yet, ours to start) */
	line[r] = '\0';
	line[strcspn(line, "\n")] = '\0';
	return journal_field(line, "event", ev, sizeof ev) && strcmp(ev, FIRST_EVENT) == 0;
}

int journal_open(const char *path, char *err, size_t n)
{
	struct stat sb;
	int made = 0, fd;
	if (lstat(path, &sb) == 0) {
		if (!S_ISREG(sb.st_mode)) {
			snprintf(err, n, "journal %s: %s: refused (a regular file of its own, or a new "
			         "path: --journal PATH)", path, kind_of(sb.st_mode));
			return -1;
		}
		fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	} else if (errno == ENOENT) {
		fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
		          O_NOCTTY | O_CLOEXEC, 0600);
		made = 1;
	} else {
		fd = -1;
	}
	if (fd < 0) {
		snprintf(err, n, "journal %s: %s", path, strerror(errno));
		return -1;
	}
	/* (what was opened is what lstat saw: a path swapped meanwhile is refused too) */
	struct stat now;
	if (fstat(fd, &now) != 0 || !S_ISREG(now.st_mode) ||
	    (!made && (now.st_ino != sb.st_ino || now.st_dev != sb.st_dev))) {
		snprintf(err, n, "journal %s: changed while it was opened: refused", path);
		close(fd);
		return -1;
	}
	if (!made && !trusted(&now, path, err, n)) {
		close(fd);
		return -1;
	}
	if (!made && !ours(fd)) {
		snprintf(err, n, "journal %s: a file socktune did not make (its first line is not a "
		         "journal's): refused, it is left as it is", path);
		close(fd);
		return -1;
	}
	if (made || now.st_size == 0) {
		struct rec *r = rec_new();
		rec_str(r, K_VERSION, ST_VERSION);
		rec_str(r, K_EVENT, FIRST_EVENT);
		int rc = journal_append(fd, "watch", r);
		rec_free(r);
		if (rc != 0) {
			snprintf(err, n, "journal %s: %s", path, strerror(errno));
			close(fd);
			if (made)
				unlink(path);
			return -1;
		}
	}
	return fd;
}

int journal_append(int fd, const char *command, struct rec *r)
{
	struct timespec t;
	struct tm tm;
	char when[40];
	clock_gettime(CLOCK_REALTIME, &t);
	gmtime_r(&t.tv_sec, &tm);
	size_t k = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + k, sizeof when - k, ".%03ldZ", t.tv_nsec / 1000000);
	rec_str(r, K_JRN_TIME, when);
	/* each line a document of its own: the schema and the command that wrote it first */
	struct rec *doc = rec_new();
	if (!doc)
		return -1;
	rec_int(doc, K_SCHEMA, REC_SCHEMA_VERSION);
	rec_str(doc, K_COMMAND, command);
	rec_copy_members(doc, r);
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	if (!m) {
		rec_free(doc);
		return -1;
	}
	rec_write_json_line(m, doc);
	rec_free(doc);
	if (fclose(m) != 0) {
		free(line);
		return -1;
	}
	/* one write: a line is whole or absent (O_APPEND: after whatever revert added) */
	ssize_t w = write(fd, line, len);
	int err = errno;
	free(line);
	if (w < 0 || (size_t)w != len) {
		errno = w < 0 ? err : EIO;
		return -1;
	}
	return fsync(fd);
}

void journal_change_id(char *out, const char *finding, const char *option, int pid, int fd)
{
	struct timespec t;
	char key[160];
	clock_gettime(CLOCK_REALTIME, &t);
	snprintf(key, sizeof key, "%s|%s|%d|%d|%lld.%09ld", finding, option, pid, fd,
	         (long long)t.tv_sec, t.tv_nsec);
	unsigned long long h = 0xcbf29ce484222325ull;
	for (const char *c = key; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	snprintf(out, 17, "%016llx", h);
}

static long long num(const char *line, const char *key, long long dflt)
{
	char v[32], *end;
	if (!journal_field(line, key, v, sizeof v))
		return dflt;
	long long x = strtoll(v, &end, 10);
	return *end || end == v ? dflt : x;
}

int journal_read(const char *path, struct journal_change **out, char *err, size_t n)
{
	int fd = -1;
	struct stat sb;
	*out = NULL;
	if (lstat(path, &sb) != 0) {
		snprintf(err, n, "journal %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, n, "journal %s: %s: refused", path, kind_of(sb.st_mode));
		return -1;
	}
	if (!trusted(&sb, path, err, n))
		return -1;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0) {
		snprintf(err, n, "journal %s: %s", path, strerror(errno));
		return -1;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		snprintf(err, n, "journal %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	static char line[LINE_MAX_LEN];
	struct journal_change *c = NULL;
	size_t nc = 0, cap = 0;
	int first = 1, bad = 0;
	while (fgets(line, sizeof line, f)) {
		char ev[32] = "", id[17];
		line[strcspn(line, "\n")] = '\0';
		journal_field(line, "event", ev, sizeof ev);
		if (first && strcmp(ev, FIRST_EVENT) != 0)
			bad = 1;
		first = 0;
		if (bad)
			break;
		if (strcmp(ev, "revert") == 0 && journal_field(line, "change", id, sizeof id)) {
			for (size_t k = 0; k < nc; k++)
				if (strcmp(c[k].change, id) == 0)
					c[k].reverted = 1;
			continue;
		}
		if (strcmp(ev, "apply") != 0)
			continue;
		if (nc == cap) {
			struct journal_change *g = realloc(c, (cap = cap ? 2 * cap : 16) * sizeof *c);
			if (!g)
				break;
			c = g;
		}
		struct journal_change *j = &c[nc];
		memset(j, 0, sizeof *j);
		if (!journal_field(line, "change", j->change, sizeof j->change) ||
		    !journal_field(line, "option", j->option, sizeof j->option))
			continue;
		journal_field(line, "finding", j->finding, sizeof j->finding);
		journal_field(line, "kind", j->kind, sizeof j->kind);
		journal_field(line, "addr", j->addr, sizeof j->addr);
		journal_field(line, "time", j->when, sizeof j->when);
		j->pid = (int)num(line, "pid", -1);
		j->fd = (int)num(line, "fd", -1);
		j->before = (int)num(line, "before", -1);
		j->after = (int)num(line, "after", -1);
		j->inode = (unsigned long long)num(line, "inode", 0);
		j->netns = (unsigned long long)num(line, "netns", 0);
		if (j->pid > 0 && j->fd >= 0 && j->before >= 0)
			nc++;
	}
	fclose(f);
	if (bad) {
		free(c);
		snprintf(err, n, "journal %s: not a journal socktune made (its first line)", path);
		return -1;
	}
	*out = c;
	return (int)nc;
}
