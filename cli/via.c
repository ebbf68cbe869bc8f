/* via.h: the choice of path, and the line each run of the iterator leaves.  That line names
 * what the run held in the kernel by id (its program, map and link), so that anyone can ask
 * the kernel afterwards that none of them is there any more (bpftool prog show id N). */
#include <string.h>
#include <unistd.h>

#include "record.h"
#include "via.h"

static const char *const names[] = {"auto", "pidfd", "bpf"};

int via_parse(const char *word, enum via *v)
{
	for (int k = 0; word && k < 3; k++)
		if (strcmp(word, names[k]) == 0) {
			*v = (enum via)k;
			return 0;
		}
	return -1;
}

const char *via_name(int via)
{
	return via >= 0 && via < 3 ? names[via] : "?";
}

void via_say_run(FILE *f, const char *command, const char *netns, const struct bi_run *r,
                 int asked, double ms, int rc, const char *err)
{
	struct rec *w = rec_new();
	rec_int(w, K_PID, (long long)getpid());
	rec_str(w, K_LEVEL, rc == 0 ? "info" : "warn");
	rec_str(w, K_EVENT, "iterator");
	rec_str(w, K_COMMAND, command);
	rec_str(w, K_NETNS_FILE, netns);
	rec_int(w, K_PROG_ID, r->prog_id);
	rec_int(w, K_MAP_ID, r->map_id);
	rec_int(w, K_LINK_ID, r->link_id);
	rec_int(w, K_INSNS, r->insns);
	rec_int(w, K_ASKED, asked);
	rec_int(w, K_RECORDS, r->records);
	rec_int(w, K_NOT_VISITED, r->not_visited);
	rec_num(w, K_TOOK_MS, ms, 1);
	if (rc != 0)
		rec_str(w, K_ERROR, err);
	rec_say(f, "socktune ", w);
	rec_free(w);
}
