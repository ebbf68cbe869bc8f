/* socktune revert [--journal PATH] [ID|all]: the changes watch --apply made (its journal,
 * cli/journal.c) set back to the values they had before, the newest first (a socket changed
 * twice ends as it was before the first), each through a pidfd_getfd copy of the socket that
 * is checked to be the same socket (its inode), read back and said; each undone change marked
 * in the journal by a line of its own.  A change whose socket is gone has nothing left to
 * undo: said, and marked too.  Without ID or all, the changes still in force are listed and
 * nothing is changed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "record.h"
#include "revert.h"

void revert_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune revert [--journal PATH] [ID|all]\n"
	        "\n"
	        "Undoes what socktune watch --apply changed, from its journal: each change's\n"
	        "socket (the same process, descriptor and inode) gets its value from before the\n"
	        "change again, read back from the kernel and said on stdout; the journal gets a\n"
	        "line marking the change reverted.  ID reverts one change (its \"change\" in the\n"
	        "journal), all every change not reverted yet, newest first; without either the\n"
	        "changes still in force are listed and nothing is changed.  A watch that sees its\n"
	        "value undone backs off: it does not apply that option to that listener again.\n"
	        "\n"
	        "Options:\n");
	help_entry(f, "--journal PATH",
	           "the journal watch --apply wrote (default: $STATE_DIRECTORY/journal.jsonl, else "
	           "/var/lib/socktune/journal.jsonl)", NULL);
	help_entry(f, "--help", "", NULL);
	fprintf(f, "\n"
	           "Exit status: 0 when every change asked for is undone (or there was none);\n"
	           "1 when one could not be (no access to the process: same uid and dumpable,\n"
	           "or CAP_SYS_PTRACE); 2 for a bad option or an unknown ID; 3 when the journal\n"
	           "cannot be read or is not one socktune made.\n");
}

enum cli_status revert_parse(int argc, char **argv, struct revert_args *a, FILE *msg)
{
	memset(a, 0, sizeof *a);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0)
			return CLI_HELP;
		if (strcmp(o, "--journal") == 0) {
			if (i + 1 >= argc || !argv[i + 1][0])
				return usage_error(msg, "revert --journal: missing PATH");
			a->journal = argv[++i];
		} else if (o[0] == '-') {
			return usage_error(msg, "revert: unknown option %s (--journal PATH, ID or all)", o);
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

static enum sockcopy_what what_of(const char *option)
{
	return strcmp(option, "backlog") == 0 ? SC_BACKLOG : SC_NODELAY;
}

/* One change undone (or found gone): its line on stdout, its mark in the journal; 0 done */
static int undo(int jfd, const char *path, const struct journal_change *c)
{
	int before = -1, after = -1;
	int rc = sockcopy_change(c->pid, c->fd, c->inode, what_of(c->option), c->before, &before,
	                         &after);
	int err = errno;
	int gone = rc != 0 && (err == ESRCH || err == ESTALE || err == EBADF);
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "revert");
	rec_str(r, K_JRN_CHANGE, c->change);
	rec_str(r, K_JRN_FINDING, c->finding);
	rec_str(r, K_CHK_OPTION, c->option);
	rec_int(r, K_PID, c->pid);
	rec_int(r, K_FD, c->fd);
	rec_str(r, K_ADDR, c->addr);
	rec_known(r, K_JRN_BEFORE, before);
	rec_known(r, K_JRN_AFTER, after);
	if (rc != 0)
		rec_str(r, K_ERROR, gone ? "the socket is gone: nothing to undo" : strerror(err));
	rec_say(stdout, "socktune ", r);
	int ok = rc == 0 && after == c->before;
	if (rc == 0 && !ok)
		fprintf(stderr, "socktune: revert %s: %s reads %d after setting %d\n", c->change,
		        c->option, after, c->before);
	if (rc != 0 && !gone)
		fprintf(stderr, "socktune: revert %s: pid %d fd %d: %s%s\n", c->change, c->pid, c->fd,
		        strerror(err), err == EPERM ? " (same uid and dumpable, or CAP_SYS_PTRACE)" : "");
	if ((ok || gone) && journal_append(jfd, "revert", r) != 0) {
		fprintf(stderr, "socktune: revert: journal %s: %s: change %s undone, not marked\n",
		        path, strerror(errno), c->change);
		ok = gone = 0;
	}
	rec_free(r);
	return ok || gone ? 0 : -1;
}

int revert_main(const struct revert_args *a)
{
	char def[4096], err[4400];
	const char *path = a->journal ? a->journal : journal_default(def, sizeof def);
	struct journal_change *c;
	int n = journal_read(path, &c, err, sizeof err);
	if (n < 0) {
		fprintf(stderr, "socktune: revert: %s\n", err);
		return EXIT_NOT_FOUND;
	}
	int status = 0, matched = 0, jfd = -1;
	if (a->which && (jfd = journal_open(path, err, sizeof err)) < 0) {
		fprintf(stderr, "socktune: revert: %s\n", err);
		free(c);
		return EXIT_NOT_FOUND;
	}
	for (int k = n - 1; k >= 0; k--) {
		if (a->which && strcmp(a->which, "all") != 0 && strcmp(a->which, c[k].change) != 0)
			continue;
		matched++;
		if (!a->which) {
			if (!c[k].reverted)
				printf("socktune change=%s finding=%s kind=%s option=%s pid=%d fd=%d "
				       "addr=%s before=%d after=%d time=%s\n", c[k].change, c[k].finding,
				       c[k].kind, c[k].option, c[k].pid, c[k].fd, c[k].addr, c[k].before,
				       c[k].after, c[k].when);
			continue;
		}
		if (c[k].reverted) {
			if (strcmp(a->which, "all") != 0)
				fprintf(stderr, "socktune: revert %s: already reverted\n", c[k].change);
			continue;
		}
		if (undo(jfd, path, &c[k]) != 0)
			status = 1;
	}
	if (a->which && strcmp(a->which, "all") != 0 && !matched) {
		fprintf(stderr, "socktune: revert %s: no such change in %s\n", a->which, path);
		status = EXIT_USAGE;
	}
	if (jfd >= 0)
		close(jfd);
	free(c);
	return status;
}
