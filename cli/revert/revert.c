/* socktune revert [--journal PATH] [ID|all]: the changes watch --apply made (its journal,
 * cli/journal.c) set back to the values they had before, the newest first (a socket changed
 * twice ends as it was before the first), each through a pidfd_getfd copy of the socket.
 * A socket is changed only when it is provably the one apply changed and still holds what
 * apply set: the same process (pid and its start time: a pid reused by another process is
 * not taken), descriptor and inode, and the value apply read back after its change.  That
 * process gone (or its fd another file now), the socket is looked for by its inode among
 * the holders in the journalled netns: a listener handed to a child, or kept by workers
 * whose master exited, is set back through the process that holds it now (held_by).  What
 * is not is left, and said: the socket gone, the pid another process's, the value changed
 * since (the application's own, kept), a line of the journal that lacks a field (cut by a
 * full disk or a truncate, or too long), an option revert does not know.  Each change undone,
 * or found with nothing left to undo, is marked in the journal by a line of its own.  A
 * listener set back also sets back the connections it accepted since that inherited the
 * value (revertconn.c).  The journal is opened once, checked on its descriptor, and held
 * locked (flock) while it is read and marked: two reverts at once never both act.  Without
 * ID or all, the changes still in force are listed and nothing is changed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host/diag.h"
#include "findings/findings.h"
#include "journal.h"
#include "record.h"
#include "revert/revert.h"
#include "via.h"
#include "host/itertune.h"
#include "host/sockcopy.h"

#define LOCK_WAIT_MS 10000 /* for another revert's lock on the journal */

void revert_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune revert [--journal PATH] [--via pidfd|bpf|auto] [ID|all]\n"
	        "\n"
	        "Undoes what socktune watch --apply changed, from its journal: a socket that is\n"
	        "provably the one a change changed (the same process, by pid and start time;\n"
	        "descriptor; inode) and still holds the value it set gets its value from\n"
	        "before the change again, read back from the kernel and said on stdout; that\n"
	        "process gone, through the process holding its socket now (by inode, in the\n"
	        "journalled network namespace: a child, workers), said as held_by; a listener's\n"
	        "NODELAY also on the connections it accepted since (inherited).  The journal\n"
	        "gets a line marking the change reverted.  A socket gone, a pid another\n"
	        "process's, a value set since by the application (kept) is left and said; a\n"
	        "journal line that is cut, too long, lacks a field or names an option revert\n"
	        "does not know is never acted on: said.  ID reverts one change (its \"change\"\n"
	        "in the journal), all every change not reverted yet, newest first; without\n"
	        "either the changes still in force are listed and nothing is changed.  One\n"
	        "revert at a time: another waits for the journal's lock.  A watch that sees its\n"
	        "value undone backs off: it does not apply that option to that listener again.\n"
	        "\n"
	        "Options:\n");
	help_entry(f, "--journal PATH",
	           "the journal watch --apply wrote (default: $STATE_DIRECTORY/journal.jsonl, else "
	           "/var/lib/socktune/journal.jsonl)", NULL);
	help_entry(f, "--via pidfd|bpf|auto",
	           "how a socket is set back: pidfd, through a pidfd_getfd copy from the journalled "
	           "process (ptrace access); bpf, through a TCP iterator program, by the socket's "
	           "cookie and inode in its journalled network namespace (CAP_BPF with "
	           "CAP_PERFMON, or CAP_SYS_ADMIN); auto (default): each change by the path the "
	           "journal says it took, a copy's through the iterator when no copy is given now "
	           "and its cookie was journalled", NULL);
	help_entry(f, "--help", "", NULL);
	fprintf(f, "\n"
	           "Exit status: 0 when every change asked for is undone, or had nothing left to\n"
	           "undo (none, gone, set since); 1 when one could not be (no access to the\n"
	           "process: same uid and dumpable, or CAP_SYS_PTRACE), a journal line was not\n"
	           "acted on, or another revert held the journal for 10 s; 2 for a bad option or\n"
	           "an unknown ID; 3 when the journal cannot be read or is not one socktune made.\n");
}

enum cli_status revert_parse(int argc, char **argv, void *args, FILE *msg)
{
	struct revert_args *a = args;
	memset(a, 0, sizeof *a);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v;
		if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0)
			return CLI_HELP;
		if (opt_value(argc, argv, &i, "--journal", &v)) {
			if (!v || !v[0])
				return usage_error(msg, "revert --journal: missing PATH");
			a->journal = v;
		} else if (opt_value(argc, argv, &i, "--via", &v)) {
			enum via w;
			if (!v || via_parse(v, &w) != 0)
				return usage_error(msg, "revert --via %s: pidfd, bpf or auto",
				                   v ? v : "(missing)");
			a->via = (int)w;
		} else if (o[0] == '-') {
			return usage_error(msg, "revert: unknown option %s (--journal PATH, --via, ID or "
			                   "all)", o);
		} else if (a->which) {
			return usage_error(msg, "revert: one ID or all, not %s and %s", a->which, o);
		} else {
			size_t n = strlen(o);
			if (strcmp(o, "all") != 0 && (n != 16 || strspn(o, "0123456789abcdef") != 16))
				return usage_error(msg, "revert %s: not a change's id (16 hex digits, the "
				                   "journal's \"change\") or all", o);
			a->which = o;
		}
	}
	return CLI_GO;
}

/* Why a change is left as it is: said on stdout (error) and stderr, status 1 (nothing in
 * the journal: the change may still be in force, and only a person can tell) */
static int refuse(const char *path, const struct journal_change *c, const char *why)
{
	char err[400];
	snprintf(err, sizeof err, "journal line %ld: %s: not acted on, left as it is", c->line,
	         why);
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "revert");
	if (c->change[0])
		rec_str(r, K_JRN_CHANGE, c->change);
	if (c->option[0])
		rec_str(r, K_CHK_OPTION, c->option);
	if (c->pid > 0)
		rec_int(r, K_PID, c->pid);
	if (c->fd >= 0)
		rec_int(r, K_FD, c->fd);
	if (c->addr[0])
		rec_str(r, K_ADDR, c->addr);
	rec_str(r, K_ERROR, err);
	rec_say(stdout, "socktune ", r);
	rec_free(r);
	fprintf(stderr, "socktune: revert %s: journal %s: %s\n", c->change[0] ? c->change : "?",
	        path, err);
	return -1;
}

/* The socket of inode c->inode, its journalled process gone or not holding it at c->fd now,
 * still held by another (a child it was handed to, the workers that outlived their master:
 * an nginx binary upgrade) or by the same process at another descriptor: a copy through
 * the first holder that gives one, in the journalled network namespace (an inode names one
 * socket node-wide while it is open), *held_by its pid; -1 when none does (*held: 1 when a
 * holder was found but would not give it, errno why) */
static int holder_copy(const struct journal_change *c, int *held, int *held_by)
{
	struct holders hs = {0};
	int copy = -1, err = ESRCH;
	*held = 0;
	if (!c->netns) {
		errno = ESRCH;
		return -1; /* (a line without its namespace: the inode is not looked for) */
	}
	holders_scan(&hs, NULL, 0);
	const struct holder *h = holders_find(&hs, c->inode);
	for (; h && h < hs.h + hs.n && h->ino == c->inode && copy < 0; h++) {
		unsigned long long start = sockcopy_start_of(h->pid);
		if (!start || netns_of(h->pid) != c->netns)
			continue;
		*held = 1;
		copy = sockcopy_open_proc(h->pid, start, h->fd, c->inode);
		if (copy >= 0)
			*held_by = h->pid;
		else
			err = errno;
	}
	free(hs.h);
	errno = err;
	return copy;
}

/* One change undone, left, or refused: its line on stdout, its mark in the journal unless
 * refused; 0 done or nothing to undo, -1 not.  By the path it was made by (the journal's
 * via), or through the iterator where --via says so, or (auto) where a change a copy made
 * gets no copy now and its cookie was journalled. */
static int undo(int jfd, const char *path, const struct journal_change *all, int n,
                const struct journal_change *c, int via)
{
	if (c->unusable)
		return refuse(path, c, c->unusable);
	/* (only the option of a cure in the findings' table: a name it does not know is never
	 * taken for another) */
	int what = doc_cure_option(c->option);
	if (what < 0) {
		char why[160], known[96];
		doc_cure_keys(known, sizeof known);
		snprintf(why, sizeof why, "option \"%s\" is not one revert knows (%s)", c->option,
		         known);
		return refuse(path, c, why);
	}
	int bpf = strcmp(c->via, "bpf") == 0;
	if (bpf && via == VIA_PIDFD)
		return refuse(path, c, "changed through the TCP iterator, which --via pidfd refuses: "
		              "--via bpf or auto");
	if (!bpf && via == VIA_BPF && !c->cookie)
		return refuse(path, c, "a copy's change with no cookie journalled: the TCP iterator "
		              "cannot name its socket (--via pidfd or auto)");
	if (bpf || via == VIA_BPF)
		return revert_bpf(jfd, path, all, n, c, what);
	int before = -1, after = -1, now = -1, rc = -1, err = 0, conns = -1;
	char left[300] = "", note[400] = "";
	int copy = sockcopy_open_proc(c->pid, c->start, c->fd, c->inode), held = 0, held_by = 0;
	if (copy < 0 && (errno == ESRCH || errno == ESTALE || errno == EBADF)) {
		int e = errno;
		copy = holder_copy(c, &held, &held_by);
		if (copy < 0)
			errno = held ? errno : e;
	}
	if (copy < 0 && (errno == EPERM || errno == EACCES) && via == VIA_AUTO && c->cookie) {
		char why[400];
		if (it_usable(why, sizeof why))
			return revert_bpf(jfd, path, all, n, c, what); /* (no copy: by its cookie) */
	}
	if (copy < 0 && held) {
		err = errno; /* (held, not taken: no access to its holder; never "gone") */
	} else if (copy < 0) {
		err = errno;
		unsigned long long start = sockcopy_start_of(c->pid);
		if (err == ESRCH && start && start != c->start)
			snprintf(left, sizeof left, "pid %d is another process now (started at %llu, "
			         "not %llu): left", c->pid, start, c->start);
		else if (err == ESRCH)
			snprintf(left, sizeof left, "the socket is gone (its process exited): nothing to "
			         "undo");
		else if (err == ESTALE || err == EBADF)
			snprintf(left, sizeof left, "the socket is gone (fd %d of pid %d is not the "
			         "socket of inode %llu now): nothing to undo", c->fd, c->pid, c->inode);
	} else if ((now = sockcopy_get(copy, what)) != c->after) {
		err = errno;
		if (now >= 0)
			snprintf(left, sizeof left, "the value is %d now, not the %d apply set: left "
			         "(set since by the application or an operator)", now, c->after);
	} else {
		before = now;
		rc = sockcopy_set(copy, what, c->before);
		err = errno;
		after = sockcopy_get(copy, what);
		int accepting = 0;
		socklen_t len = sizeof accepting;
		if (rc == 0 && sockcopy_inherited(what) &&
		    getsockopt(copy, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) == 0 && accepting) {
			int nskip;
			unsigned long long *skip = revert_others(all, n, c, &nskip);
			struct revert_sweep sw = {.opt = what, .pid = held_by > 0 ? held_by : c->pid,
			                          .listener = copy, .applied = c->after,
			                          .before = c->before,
			                          .start = held_by > 0 ? sockcopy_start_of(held_by)
			                                               : c->start,
			                          .netns = c->netns, .skip = skip, .nskip = nskip};
			char why[200];
			if (revert_conns(&sw, why, sizeof why) == 0) {
				conns = sw.set;
				if (sw.set || sw.failed)
					snprintf(note, sizeof note, "%d connection%s of this listener held "
					         "%s %d, inherited from it since the change: set back to "
					         "%d, each read back%s (a connection the application set to %d "
					         "itself cannot be told from these: it is set back too)",
					         sw.set + sw.failed, sw.set + sw.failed == 1 ? "" : "s",
					         c->option, c->after,
					         c->before, sw.failed ? "; some would not take it" : "",
					         c->after);
				if (sw.failed)
					rc = -1, err = EIO;
			} else {
				snprintf(note, sizeof note, "the connections accepted since the change were "
				         "not looked at (%s): they may still hold %s %d", why, c->option,
				         c->after);
			}
			free(skip);
		}
	}
	if (copy >= 0)
		close(copy);
	struct rec *r = revert_rec(c);
	rec_int(r, K_PID, c->pid);
	rec_int(r, K_FD, c->fd);
	rec_str(r, K_ADDR, c->addr);
	if (held_by > 0)
		rec_int(r, K_JRN_HELD_BY, held_by);
	int failed = rc != 0 && !left[0]; /* (neither undone nor left as another's) */
	if (failed && held && held_by <= 0)
		fprintf(stderr, "socktune: revert %s: pid %d is gone, its socket (inode %llu) is held "
		        "by another process, not taken: %s%s\n", c->change, c->pid, c->inode,
		        strerror(err), err == EPERM ? " (same uid and dumpable, or CAP_SYS_PTRACE)" : "");
	else if (failed)
		fprintf(stderr, "socktune: revert %s: pid %d fd %d: %s%s\n", c->change,
		        held_by > 0 ? held_by : c->pid, c->fd,
		        strerror(err), err == EPERM ? " (same uid and dumpable, or CAP_SYS_PTRACE)" : "");
	return revert_said(jfd, path, c, r, &(struct revert_end){.rc = rc, .before = before,
	                   .after = after, .conns = conns, .left = left, .err = strerror(err),
	                   .note = note});
}

/* The journal held for this revert alone (flock on its descriptor), waiting a while for
 * another revert's: 0, or -1 when it was not let go */
static int lock(int jfd, const char *path)
{
	struct timespec t = {0, 20 * 1000000};
	for (int waited = 0; waited <= LOCK_WAIT_MS; waited += 20) {
		if (flock(jfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			break;
		if (waited == 0)
			fprintf(stderr, "socktune: revert: journal %s: another revert holds it: "
			        "waiting\n", path);
		nanosleep(&t, NULL);
	}
	fprintf(stderr, "socktune: revert: journal %s: another revert still holds it after %d s: "
	        "nothing changed\n", path, LOCK_WAIT_MS / 1000);
	return -1;
}

static void list(const struct journal_change *c)
{
	printf("socktune change=%s finding=%s kind=%s option=%s", c->change[0] ? c->change : "?",
	       c->finding, c->kind, c->option);
	if (c->pid > 0)
		printf(" pid=%d fd=%d", c->pid, c->fd);
	printf(" addr=%s before=%d after=%d", c->addr, c->before, c->after);
	if (c->via[0])
		printf(" via=%s", c->via);
	if (c->cookie)
		printf(" cookie=%llu", c->cookie);
	printf(" time=%s", c->when);
	if (c->unusable)
		printf(" error=\"journal line %ld: %s: revert leaves it\"", c->line, c->unusable);
	printf("\n");
}

int revert_main(void *args)
{
	const struct revert_args *a = args;
	char def[4096], err[4400];
	const char *path = a->journal ? a->journal : journal_default(def, sizeof def);
	int jfd = journal_open_existing(path, a->which ? JOURNAL_APPEND : JOURNAL_READ, err,
	                                sizeof err);
	if (jfd < 0) {
		fprintf(stderr, "socktune: revert: %s\n", err);
		return EXIT_NOT_FOUND;
	}
	if (a->which && lock(jfd, path) != 0) {
		close(jfd);
		return 1;
	}
	/* (read under the lock: a change another revert just marked is seen marked) */
	struct journal_change *c;
	int n = journal_read(jfd, &c, err, sizeof err);
	if (n < 0) {
		fprintf(stderr, "socktune: revert: journal %s: %s\n", path, err);
		close(jfd);
		return EXIT_NOT_FOUND;
	}
	int status = 0, matched = 0;
	for (int k = n - 1; k >= 0; k--) {
		if (a->which && strcmp(a->which, "all") != 0 && strcmp(a->which, c[k].change) != 0)
			continue;
		matched++;
		if (!a->which) {
			if (!c[k].reverted)
				list(&c[k]);
			continue;
		}
		if (c[k].reverted) {
			if (strcmp(a->which, "all") != 0)
				fprintf(stderr, "socktune: revert %s: already reverted\n", c[k].change);
			continue;
		}
		if (undo(jfd, path, c, n, &c[k], a->via) != 0)
			status = 1;
	}
	if (a->which && strcmp(a->which, "all") != 0 && !matched) {
		fprintf(stderr, "socktune: revert %s: no such change in %s\n", a->which, path);
		status = EXIT_USAGE;
	}
	close(jfd); /* (and the lock with it) */
	free(c);
	return status;
}
