/* The journal of watch --apply: every change one JSON line (what, why, before, after, when,
 * which process, descriptor and address), appended to a file the command made itself, each
 * line in one write(2) and fsync'd before watch goes on, so a crash never leaves a change
 * unrecorded.  The path is checked before it is opened: a symlink, a FIFO (a reader could
 * stall every write), a device or a file some other program wrote is never written into.
 * socktune revert reads it back here, and appends its own lines: the file is only ever
 * appended to, never rewritten. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* journal_field's, *over set when the value is there but does not fit in n (never cut to
 * fit: a 32-digit fd cut is another fd, a 17-digit change id cut another change's) */
static int field(const char *line, const char *key, char *out, size_t n, int *over)
{
	size_t kl = strlen(key);
	*over = 0;
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
				else
					*over = 1;
			}
			if (*v != '"')
				return 0;
		} else {
			for (; *v && *v != ',' && *v != '}' && *v != ' '; v++)
				if (k + 1 < n)
					out[k++] = *v;
				else
					*over = 1;
			if (!k)
				return 0;
		}
		out[k] = '\0';
		if (*over) {
			out[0] = '\0';
			return 0;
		}
		return 1;
	}
	return 0;
}

int journal_field(const char *line, const char *key, char *out, size_t n)
{
	int over;
	return field(line, key, out, n, &over);
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

/* The path opened once, every check made on what was opened (fstat, pread), never on the
 * path before it: a name swapped between a check and the open (a user who owns the
 * directory can rename files there at any moment) cannot slip another file in.  O_NOFOLLOW
 * refuses a symlink, O_NONBLOCK keeps a FIFO from stalling the open (cleared once the file
 * is known to be a regular one), O_NOCTTY a terminal from becoming ours. */
static int open_checked(const char *path, int how, char *err, size_t n)
{
	int made = 0, fd = -1;
	int flags = (how == JOURNAL_READ ? O_RDONLY : O_RDWR | O_APPEND) | O_NOFOLLOW | O_NONBLOCK |
	            O_NOCTTY | O_CLOEXEC;
	if (how == JOURNAL_MAKE) {
		fd = open(path, flags | O_CREAT | O_EXCL, 0600);
		made = fd >= 0;
	}
	if (fd < 0 && (how != JOURNAL_MAKE || errno == EEXIST))
		fd = open(path, flags);
	if (fd < 0) {
		int e = errno;
		snprintf(err, n, "journal %s: %s", path, e == ELOOP ? "a symlink: refused (a regular "
		         "file of its own, or a new path: --journal PATH)" : strerror(e));
		errno = e;
		return -1;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		snprintf(err, n, "journal %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, n, "journal %s: %s: refused (a regular file of its own, or a new "
		         "path: --journal PATH)", path, kind_of(sb.st_mode));
		close(fd);
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		snprintf(err, n, "journal %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!made && !trusted(&sb, path, err, n)) {
		close(fd);
		return -1;
	}
	if (!made && !ours(fd)) {
		snprintf(err, n, "journal %s: a file socktune did not make (its first line is not a "
		         "journal's): refused, it is left as it is", path);
		close(fd);
		return -1;
	}
	if (how == JOURNAL_READ)
		return fd;
	if (made || sb.st_size == 0) {
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

int journal_open(const char *path, char *err, size_t n)
{
	return open_checked(path, JOURNAL_MAKE, err, n);
}

int journal_open_existing(const char *path, int how, char *err, size_t n)
{
	return open_checked(path, how == JOURNAL_MAKE ? JOURNAL_APPEND : how, err, n);
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
	/* A file that does not end a line (a write cut by a full disk) gets one ended first, in
	 * the same write, so this line is never glued onto that one's fields. */
	struct stat sb;
	char last = '\n';
	if (fstat(fd, &sb) == 0 && sb.st_size > 0 && pread(fd, &last, 1, sb.st_size - 1) == 1 &&
	    last != '\n') {
		char *nl = malloc(len + 1);
		if (!nl) {
			free(line);
			return -1;
		}
		nl[0] = '\n';
		memcpy(nl + 1, line, len++);
		free(line);
		line = nl;
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

/* The first key of an apply line whose value is longer than its field takes: the reason
 * the line is not acted on (static text), or NULL */
static const char *overlong;

/* journal_field, a value too long to fit noted in overlong */
static int take(const char *line, const char *key, char *out, size_t n, const char *why)
{
	int over, found = field(line, key, out, n, &over);
	if (over && !overlong)
		overlong = why;
	return found;
}
#define TOO_LONG(key) "field \"" key "\" longer than a socktune journal writes (never cut to fit)"

static long long num(const char *line, const char *key, long long dflt, const char *why)
{
	char v[32], *end;
	if (!take(line, key, v, sizeof v, why))
		return dflt;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	return *end || end == v || errno ? dflt : x;
}

/* The line is one JSON object, whole: '{' first, its closing '}' last, nothing after it.  A
 * line cut by a full disk or a truncate is not (and a line that the next write was glued to
 * holds two objects): none of its fields can be trusted to be the ones written together. */
static int whole(const char *line)
{
	int depth = 0, str = 0;
	if (line[0] != '{')
		return 0;
	for (const char *p = line; *p; p++) {
		if (str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				str = 0;
		} else if (*p == '"') {
			str = 1;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return p[1] == '\0';
			if (depth < 0)
				return 0;
		}
	}
	return 0;
}

/* An apply line, its fields read; c->unusable says what is missing or wrong (NULL: none) */
static void parse_apply(const char *line, struct journal_change *c)
{
	overlong = NULL;
	if (!take(line, "change", c->change, sizeof c->change, TOO_LONG("change")))
		c->change[0] = '\0';
	take(line, "finding", c->finding, sizeof c->finding, TOO_LONG("finding"));
	take(line, "kind", c->kind, sizeof c->kind, TOO_LONG("kind"));
	take(line, "option", c->option, sizeof c->option, TOO_LONG("option"));
	take(line, "addr", c->addr, sizeof c->addr, TOO_LONG("addr"));
	take(line, "peer", c->peer, sizeof c->peer, TOO_LONG("peer"));
	take(line, "time", c->when, sizeof c->when, TOO_LONG("time"));
	long long pid = num(line, "pid", -1, TOO_LONG("pid"));
	long long fd = num(line, "fd", -1, TOO_LONG("fd"));
	long long before = num(line, "before", -1, TOO_LONG("before"));
	long long after = num(line, "after", -1, TOO_LONG("after"));
	long long inode = num(line, "inode", 0, TOO_LONG("inode"));
	long long start = num(line, "pid_start", 0, TOO_LONG("pid_start"));
	c->pid = pid > 0 && pid <= INT_MAX ? (int)pid : -1;
	c->fd = fd >= 0 && fd <= INT_MAX ? (int)fd : -1;
	c->before = before >= 0 && before <= INT_MAX ? (int)before : -1;
	c->after = after >= 0 && after <= INT_MAX ? (int)after : -1;
	c->inode = inode > 0 ? (unsigned long long)inode : 0;
	c->start = start > 0 ? (unsigned long long)start : 0;
	c->netns = (unsigned long long)num(line, "netns", 0, TOO_LONG("netns"));
	long long cookie = num(line, "cookie", 0, TOO_LONG("cookie"));
	c->cookie = cookie > 0 ? (unsigned long long)cookie : 0;
	if (!take(line, "via", c->via, sizeof c->via, TOO_LONG("via")))
		snprintf(c->via, sizeof c->via, "pidfd"); /* (a line of before --via) */
	/* a change through the iterator is of a socket named by its cookie and inode in its
	 * namespace (its holder, when one was read, journalled too); a copy's of a process's
	 * descriptor (pid, its start, fd) */
	int bpf = strcmp(c->via, "bpf") == 0;
	c->unusable = overlong ? overlong
	              : !c->change[0] ? "no change id"
	              : !c->option[0] ? "no option"
	              : !bpf && strcmp(c->via, "pidfd") != 0 ? "a path revert does not know (via)"
	              : bpf && !c->cookie ? "no cookie (a change through the iterator names its "
	                                    "socket so)"
	              : bpf && !c->netns ? "no netns"
	              : !bpf && c->pid < 0 ? "no pid"
	              : !bpf && !c->start ? "no pid_start (the process's start time: a line an "
	                                    "older socktune wrote)"
	              : !bpf && c->fd < 0 ? "no fd"
	              : !c->inode ? "no inode"
	              : c->before < 0 ? "no before value"
	              : c->after < 0 ? "no after value"
	              : NULL;
}

/* One more change (NULL when memory ran out) */
static struct journal_change *more(struct journal_change **c, size_t *nc, size_t *cap)
{
	if (*nc == *cap) {
		size_t want = *cap ? 2 * *cap : 16;
		struct journal_change *g = realloc(*c, want * sizeof **c);
		if (!g)
			return NULL;
		*c = g;
		*cap = want;
	}
	struct journal_change *j = &(*c)[(*nc)++];
	memset(j, 0, sizeof *j);
	return j;
}

/* One line of the journal (number no): a change, a mark, or a line not to act on */
static void take_line(char *line, size_t len, long no, int too_long, int cut,
                      struct journal_change **c, size_t *nc, size_t *cap)
{
	int ok = !too_long && !cut && whole(line);
	char ev[32] = "", id[17];
	journal_field(line, "event", ev, sizeof ev);
	if (ok && strcmp(ev, "revert") == 0) {
		/* (a mark names a change; a mark that names none marks nothing) */
		if (journal_field(line, "change", id, sizeof id))
			for (size_t k = 0; k < *nc; k++)
				if (strcmp((*c)[k].change, id) == 0)
					(*c)[k].reverted = 1;
		return;
	}
	if (ok && strcmp(ev, "apply") != 0)
		return; /* (watch's first line; a line of some later kind) */
	if (!ev[0] && !len)
		return; /* (an empty line) */
	struct journal_change *j = more(c, nc, cap);
	if (!j)
		return;
	j->line = no;
	if (!ok) {
		if (!journal_field(line, "change", j->change, sizeof j->change))
			j->change[0] = '\0';
		journal_field(line, "option", j->option, sizeof j->option);
		journal_field(line, "addr", j->addr, sizeof j->addr);
		j->pid = j->fd = j->before = j->after = -1;
		j->unusable = too_long ? "a line longer than the reader takes (" JOURNAL_LINE_MAX_S
		                         " bytes): not read"
		                       : "a cut line (not one whole JSON object: a full disk, a "
		                         "truncate, or the next line written onto it)";
		return;
	}
	parse_apply(line, j);
}

int journal_read(int fd, struct journal_change **out, char *err, size_t n)
{
	static char buf[JOURNAL_LINE_MAX + 1];
	struct journal_change *c = NULL;
	size_t nc = 0, cap = 0, have = 0;
	off_t off = 0;
	long no = 0;
	int skipping = 0, eof = 0;
	*out = NULL;
	/* read through the descriptor that was checked (pread: whatever its offset) */
	while (!eof || have) {
		if (!eof && have < JOURNAL_LINE_MAX) {
			ssize_t r = pread(fd, buf + have, JOURNAL_LINE_MAX - have, off);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				snprintf(err, n, "journal: %s", strerror(errno));
				free(c);
				return -1;
			}
			off += r;
			have += (size_t)r;
			eof = r == 0;
		}
		char *nl = memchr(buf, '\n', have);
		if (!nl && !eof && have < JOURNAL_LINE_MAX)
			continue;
		if (!nl && eof && !have)
			break;
		size_t len = nl ? (size_t)(nl - buf) : have;
		int too_long = !nl && !eof; /* a full buffer and no end of line */
		/* (a NUL inside: the line is not the text it seems, as one cut) */
		int cut = memchr(buf, '\0', len) != NULL;
		buf[len] = '\0';
		if (!skipping) {
			no++;
			if (no == 1) {
				char ev[32] = "";
				journal_field(buf, "event", ev, sizeof ev);
				if (strcmp(ev, FIRST_EVENT) != 0) {
					free(c);
					snprintf(err, n, "journal: not a journal socktune made (its first line)");
					return -1;
				}
			} else {
				take_line(buf, len, no, too_long, cut, &c, &nc, &cap);
			}
		}
		skipping = too_long; /* (the rest of a long line, up to its end, is not a line) */
		size_t used = nl ? len + 1 : len;
		memmove(buf, buf + used, have - used);
		have -= used;
		if (eof && !nl)
			have = 0;
	}
	*out = c;
	return (int)nc;
}
