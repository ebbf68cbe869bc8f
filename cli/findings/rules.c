/* The findings as one table (findings.h's DOC_RULES, expanded here): doctor and watch run
 * its judges (doc_judge_all), watch --apply takes a finding's cure from its row, and revert
 * takes back only an option some row's cure sets.  A new finding is a row and its judge. */
#include <stdio.h>
#include <string.h>

#include "socktune_opts.h"
#include "findings/findings.h"

const struct doc_rule doc_rules[DOC_R_COUNT] = {
#define DOC_ROW(id, kind_, judge_, where_, option_, value_, flags_)                   \
	[DOC_R_##id] = {.kind = kind_, .judge = judge_, .where = where_, .option = option_, \
	                .value = value_, .flags = flags_},
	DOC_RULES(DOC_ROW)
#undef DOC_ROW
};

void doc_judge_all(const struct shared_window *d, unsigned where, struct doc_findings *out)
{
	doctor_findings_free(out);
	out->dropped = 0;
	for (int r = 0; r < DOC_R_COUNT; r++)
		if ((doc_rules[r].where & where) &&
		    (r == 0 || doc_rules[r].judge != doc_rules[r - 1].judge))
			doc_rules[r].judge(d, out);
	/* (each named here, from its row: the judges use nothing of the table, which uses
	 * them) */
	for (int k = 0; k < out->n; k++)
		out->f[k].kind = doc_rules[out->f[k].rule].kind;
}

int doc_cure_option(const char *key)
{
	for (int r = 0; r < DOC_R_COUNT; r++) {
		int o = doc_rules[r].option;
		if (o != DOC_NO_CURE && strcmp(ST_KEY(o), key) == 0)
			return o;
	}
	return -1;
}

void doc_cure_keys(char *out, size_t n)
{
	size_t w = 0;
	out[0] = '\0';
	for (int r = 0; r < DOC_R_COUNT; r++) {
		int o = doc_rules[r].option, again = 0;
		for (int k = 0; k < r && o != DOC_NO_CURE; k++)
			again |= doc_rules[k].option == o;
		if (o == DOC_NO_CURE || again || w >= n)
			continue;
		int c = snprintf(out + w, n - w, "%s%s", w ? ", " : "", ST_KEY(o));
		w += c > 0 ? (size_t)c : 0;
	}
}
