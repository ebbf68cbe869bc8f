/* socktune revert: the changes of watch --apply's journal undone.  Internal to cli/revert/. */
#ifndef SOCKTUNE_REVERT_H
#define SOCKTUNE_REVERT_H

#include <stdio.h>

#include "cli.h"

struct revert_args {
	const char *journal; /* --journal PATH (NULL: the default, journal.h) */
	const char *which;   /* a change's id, "all", or NULL: list them, change nothing */
	int via;             /* --via (enum via): auto, each change by its own path */
};

/* The inodes of the other changes of c's option in all[n] (connections journalled on their
 * own: their lines undo them, a listener's sweep leaves them); malloc'd, *nskip of them */
struct journal_change;
unsigned long long *revert_others(const struct journal_change *all, int n,
                                  const struct journal_change *c, int *nskip);
/* revertbpf.c: change c (option what, ST_V_*) undone through the TCP iterator, by its cookie
 * and inode in its journalled namespace: said, marked in the journal as undo() does; 0 done
 * or nothing to undo, -1 not */
int revert_bpf(int jfd, const char *path, const struct journal_change *all, int n,
               const struct journal_change *c, int what);

/* The record of a revert of change c, its first fields (event, change, finding, option):
 * the path's own follow, then revert_said */
struct rec;
struct rec *revert_rec(const struct journal_change *c);
/* How a change's revert ended: rc 0 when set, the value before and after (-1: unknown), the
 * connections set back (-1: not looked at), left (not ours now: why, else ""), err (why it
 * failed) and a note ("": none) */
struct revert_end {
	int rc, before, after, conns;
	const char *left, *err, *note;
};
/* r completed by e and said on stdout, then marked in the journal (jfd, path) when done:
 * undone (it reads c's before again) or left.  r is freed.  0 done, -1 not */
int revert_said(int jfd, const char *path, const struct journal_change *c, struct rec *r,
                const struct revert_end *e);

/* revertconn.c: the connections listener (a copy of it) accepted from the process pid
 * (started at start, in network namespace netns: 0 any) that hold the value applied of
 * option opt (ST_V_*, one the connections inherit):
 * each set to before and read back, but those whose inodes skip lists (changes of their
 * own in the journal).  0 with set, failed (not set, or read back otherwise) and seen (the
 * listener's connections of that process); -1 with why in err when they cannot be looked at. */
struct revert_sweep {
	int opt, pid, listener, applied, before;
	unsigned long long start, netns;
	const unsigned long long *skip;
	int nskip;
	int set, failed, seen;
};
int revert_conns(struct revert_sweep *s, char *err, size_t n);

enum cli_status revert_parse(int argc, char **argv, void *args, FILE *msg); /* revert_args */
void revert_help(FILE *f);
int revert_main(void *args);

#endif
