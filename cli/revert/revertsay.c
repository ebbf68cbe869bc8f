/* socktune revert: how each change's revert is said, on stdout and in the journal, whichever
 * path set the socket back (revert.c's copy, revertbpf.c's iterator). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "journal.h"
#include "record.h"
#include "revert/revert.h"

struct rec *revert_rec(const struct journal_change *c)
{
	struct rec *r = rec_new();
	rec_str(r, K_EVENT, "revert");
	rec_str(r, K_JRN_CHANGE, c->change);
	rec_str(r, K_JRN_FINDING, c->finding);
	rec_str(r, K_CHK_OPTION, c->option);
	return r;
}

int revert_said(int jfd, const char *path, const struct journal_change *c, struct rec *r,
                const struct revert_end *e)
{
	rec_known(r, K_JRN_BEFORE, e->before);
	rec_known(r, K_JRN_AFTER, e->after);
	if (e->conns >= 0)
		rec_int(r, K_JRN_CONNECTIONS, e->conns);
	if (e->left[0])
		rec_str(r, K_ERROR, e->left);
	else if (e->rc != 0)
		rec_str(r, K_ERROR, e->err);
	if (e->note[0])
		rec_str(r, K_NOTE, e->note);
	rec_say(stdout, "socktune ", r);
	int ok = e->rc == 0 && e->after == c->before, done = ok || e->left[0];
	if (e->rc == 0 && !ok)
		fprintf(stderr, "socktune: revert %s: %s reads %d after setting %d\n", c->change,
		        c->option, e->after, c->before);
	if (done && journal_append(jfd, "revert", r) != 0) {
		fprintf(stderr, "socktune: revert: journal %s: %s: change %s %s, not marked\n", path,
		        strerror(errno), c->change, ok ? "undone" : "left");
		done = 0;
	}
	rec_free(r);
	return done ? 0 : -1;
}
