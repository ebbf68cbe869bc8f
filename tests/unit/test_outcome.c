/* What became of an option, said by the library's log line (st_outcome_keys) and by the
 * command's record (rec_outcome: attach, the JSON documents): for every option of the table,
 * in every state (dry runs and listeners found tuned too), both carry the same keys with the
 * same values, and a few are what the log has always said; the same for a listener's
 * backlog (st_backlog_keys, rec_backlog).  PASS/FAIL per group. */
#include <stdlib.h>
#include <string.h>

#include "record.c"
#include "unit.h"

static struct st_policy pol;

/* A policy that sets every socket option of the table */
static void policy_all(void)
{
	char err[160], num[24];
	memset(&pol, 0, sizeof pol);
	for (int i = 0; i < ST_V_COUNT; i++) {
		const char *v;
		if (!st_is_sockopt(i))
			continue;
		switch (st_vars[i].type) {
		case ST_T_SIZE: v = "64K"; break;
		case ST_T_BOOL: v = "1"; break;
		case ST_T_KEEPALIVE: v = "30:10:5"; break;
		case ST_T_NAME: v = "reno"; break;
		case ST_T_IFNAME: v = "lo"; break;
		case ST_T_TOS: v = "16"; break;
		case ST_T_USEC: v = "5000"; break;
		default: /* a number in its range (the mark: its largest, 32 bits set) */
			snprintf(num, sizeof num, "%lld", i == ST_V_MARK ? st_vars[i].max : st_vars[i].min + 1);
			v = num;
			break;
		}
		if (st_policy_set(&pol, (enum st_var_id)i, v, err, sizeof err) != 0)
			CASE_FAIL("%s=%s: %s", st_vars[i].env, v, err);
	}
}

/* Whether the record's JSON gives option i's value the type of its shape */
static int json_typed(const struct rec *r, int i)
{
	char *json = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&json, &len);
	if (!m)
		return 0;
	rec_write_json_line(m, r);
	fclose(m);
	const char *v = strstr(json, "\": ");
	int ok = v != NULL;
	if (ok) {
		v += 3;
		switch (st_opt_shape(i)) {
		case ST_SHAPE_GROUP: ok = *v == '{'; break;
		case ST_SHAPE_NAME: ok = *v == '"'; break;
		case ST_SHAPE_FLAG: ok = strncmp(v, "true", 4) == 0 || strncmp(v, "false", 5) == 0; break;
		case ST_SHAPE_INT: ok = *v == '-' || (*v >= '0' && *v <= '9'); break;
		}
	}
	free(json);
	return ok;
}

/* The record of one outcome as a log line's keys: " " before each, as the library's */
static void record_keys(const struct rec *r, char *out, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	out[0] = '\0';
	if (!m)
		return;
	rec_write_logfmt(m, r);
	fclose(m);
	snprintf(out, n, "%s%s", *text ? " " : "", text);
	free(text);
}

static void test_same_keys(void)
{
	static const unsigned char states[] = {ST_UNTOUCHED, ST_SET, ST_READ, ST_KEPT, ST_FAILED,
	                                       ST_FOUND};
	static const int gots[] = {0, 1, 7, 8000, 131072, -1, ST_UNREAD};
	int compared = 0, said = 0;
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		int want;
		if (!st_is_sockopt(i) || !st_opt_want(&pol, i, &want))
			continue;
		for (size_t s = 0; s < sizeof states; s++) {
			for (size_t g = 0; g < sizeof gots / sizeof gots[0]; g++) {
				struct st_outcome o = {.state = states[s], .want = want, .got = gots[g]};
				char log[400], rec[400];
				st_outcome_keys(&pol, i, &o, "cubic", log, sizeof log);
				struct rec *r = rec_new();
				rec_outcome(r, &pol, i, &o, "cubic");
				record_keys(r, rec, sizeof rec);
				int typed = !*log || json_typed(r, i);
				rec_free(r);
				compared++;
				said += *log != '\0';
				if (strcmp(log, rec) != 0 || !typed)
					CASE_FAIL("option %s state %d got %d: log \"%s\", record \"%s\"%s",
					          ST_KEY(i), states[s], gots[g], log, rec,
					          typed ? "" : " (JSON: not of its shape's type)");
			}
		}
	}
	/* every option said in three states of seven values, but an unread one */
	if (compared < 20 * 6 * 7 || said < 20 * 3 * 6)
		CASE_FAIL("compared %d outcomes, %d said: the table is not walked", compared, said);
	end_group("outcome_log_and_record_same");
}

static void test_known_lines(void)
{
	char dry[128];
	snprintf(dry, sizeof dry, " rcvbuf.want=65536 rcvbuf.effective=%lld rcvbuf.now=131072",
	         st_dry_buffer(&pol, ST_V_RCVBUF, 65536));
	static char big[] = " mark=4294967295";
	const struct {
		int opt;
		struct st_outcome o;
		const char *name, *want;
	} c[] = {
		{ST_V_NODELAY, {.state = ST_SET, .want = 1, .got = 5}, "", " nodelay=1"},
		{ST_V_NODELAY, {.state = ST_READ, .want = 1, .got = 0}, "", " nodelay=1"},
		{ST_V_NODELAY, {.state = ST_FOUND, .want = 0, .got = 0}, "", " nodelay=0"},
		{ST_V_MARK, {.state = ST_SET, .want = -1, .got = -1}, "", big},
		/* a listener found tuned says an unsigned option as the tuning did (was mark=-1) */
		{ST_V_MARK, {.state = ST_FOUND, .got = -1}, "", big},
		{ST_V_RCVBUF, {.state = ST_SET, .want = 65536, .got = 131072}, "",
		 " rcvbuf.want=65536 rcvbuf.effective=131072"},
		{ST_V_RCVBUF, {.state = ST_READ, .want = 65536, .got = 131072}, "", dry},
		{ST_V_RCVBUF, {.state = ST_FOUND, .want = 65536, .got = 131072}, "",
		 " rcvbuf.effective=131072"},
		{ST_V_DELACK_MAX, {.state = ST_SET, .want = 5000, .got = 8000}, "",
		 " delack_max_us.want=5000 delack_max_us.effective=8000"},
		{ST_V_DELACK_MAX, {.state = ST_READ, .want = 5000, .got = 200000}, "",
		 " delack_max_us.want=5000 delack_max_us.effective=5000"},
		{ST_V_CONGESTION, {.state = ST_SET, .want = 1, .got = 0}, "cubic", " congestion=cubic"},
		{ST_V_CONGESTION, {.state = ST_READ, .want = 1, .got = 0}, "cubic", " congestion=reno"},
		{ST_O_KEEPIDLE, {.state = ST_SET, .want = 30, .got = 30}, "", " keepalive.idle=30"},
		{ST_V_KEEPALIVE, {.state = ST_SET, .want = 1, .got = 1}, "", " keepalive=1"},
		{ST_V_NODELAY, {.state = ST_KEPT, .want = 1, .got = 1}, "", ""},
		{ST_V_NODELAY, {.state = ST_FAILED, .want = 1, .got = 1}, "", ""},
		{ST_V_RCVBUF, {.state = ST_SET, .want = 65536, .got = ST_UNREAD}, "", ""},
	};
	for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
		char log[200];
		size_t n = st_outcome_keys(&pol, c[k].opt, &c[k].o, c[k].name, log, sizeof log);
		if (strcmp(log, c[k].want) != 0 || n != strlen(log))
			CASE_FAIL("case %zu: \"%s\" (%zu bytes), want \"%s\"", k, log, n, c[k].want);
	}
	/* a buffer too small: cut, terminated, never past its end */
	char small[12];
	memset(small, 'x', sizeof small);
	size_t n = st_outcome_keys(&pol, ST_V_RCVBUF, &c[5].o, "", small, 10);
	if (n != 9 || strlen(small) != 9 || small[10] != 'x' || memcmp(small, " rcvbuf.w", 9) != 0)
		CASE_FAIL("cut to 10 bytes: %zu bytes \"%.10s\"", n, small);
	if (st_outcome_keys(&pol, ST_V_RCVBUF, &c[5].o, "", small, 0) != 0 || small[0] != ' ')
		CASE_FAIL("no room: something was written");
	end_group("outcome_log_keys");
}

static void test_backlog(void)
{
	const long long U = ST_STAGE_UNSAID;
	const struct {
		struct st_backlog_said b;
		const char *log, *json;
	} c[] = {
		/* the listen line; listen(fd, -1); a dry run; attach's; attach's dry run unknown */
		{{5, U, 4096, 4096, U}, " backlog.app=5 backlog.want=4096 backlog.effective=4096",
		 "{\"backlog\": {\"app\": 5, \"want\": 4096, \"effective\": 4096}}"},
		{{-1, U, 100, -1, U}, " backlog.app=-1 backlog.want=100 backlog.effective=-1",
		 "{\"backlog\": {\"app\": -1, \"want\": 100, \"effective\": -1}}"},
		{{5, U, 100000, 4096, 5},
		 " backlog.app=5 backlog.want=100000 backlog.effective=4096 backlog.now=5",
		 "{\"backlog\": {\"app\": 5, \"want\": 100000, \"effective\": 4096, \"now\": 5}}"},
		{{U, 50, 2, 2, U}, " backlog.before=50 backlog.want=2 backlog.effective=2",
		 "{\"backlog\": {\"before\": 50, \"want\": 2, \"effective\": 2}}"},
		{{U, 50, 2, ST_STAGE_UNKNOWN, U}, " backlog.before=50 backlog.want=2",
		 "{\"backlog\": {\"before\": 50, \"want\": 2, \"effective\": null}}"},
		{{-2147483648LL, U, U, U, U}, " backlog.app=-2147483648",
		 "{\"backlog\": {\"app\": -2147483648}}"},
	};
	for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
		char log[200], rec[200], *json = NULL;
		size_t len = 0;
		st_backlog_keys(&c[k].b, log, sizeof log);
		struct rec *r = rec_new();
		rec_backlog(r, &c[k].b);
		record_keys(r, rec, sizeof rec);
		FILE *m = open_memstream(&json, &len);
		if (m) {
			rec_write_json_line(m, r);
			fclose(m);
		}
		rec_free(r);
		if (strcmp(log, c[k].log) != 0 || strcmp(rec, c[k].log) != 0 || !json ||
		    strncmp(json, c[k].json, strlen(c[k].json)) != 0)
			CASE_FAIL("case %zu: log \"%s\", record \"%s\", JSON %s; want \"%s\", %s", k, log,
			          rec, json ? json : "(none)", c[k].log, c[k].json);
		free(json);
	}
	end_group("backlog_log_and_record_same");
}

/* The names the walks' writers use are the table's: a stage's ("want" is ".want"), an
 * option's key with its unit, its type from its shape */
static void test_names(void)
{
	for (int s = ST_STAGE_APP; s < ST_STAGE_COUNT; s++)
		if (strcmp(rec_keys[stage_keys[s]].name + 1, st_stage_names[s]) != 0 ||
		    rec_keys[stage_keys[s]].name[0] != '.')
			CASE_FAIL("stage %s: the record's key is %s", st_stage_names[s],
			          rec_keys[stage_keys[s]].name);
	for (int i = 0; i < ST_O_COUNT; i++) {
		char a[ST_KEY_MAX], b[ST_KEY_MAX];
		const char *r = rec_key_name(K_OPTION + i, a, sizeof a);
		const char *o = st_outcome_key(i, b, sizeof b);
		enum rec_type t = rec_key_type(K_OPTION + i);
		enum st_shape sh = st_opt_shape(i);
		if (!r || strcmp(r, o) != 0 ||
		    t != (sh == ST_SHAPE_GROUP ? REC_GROUP : sh == ST_SHAPE_NAME ? REC_STR
		          : sh == ST_SHAPE_FLAG ? REC_BOOL : REC_INT))
			CASE_FAIL("option %d: record %s (type %d), outcome %s (shape %d)", i, r ? r : "-",
			          t, o, sh);
	}
	char a[ST_KEY_MAX];
	if (strcmp(st_outcome_key(ST_V_DELACK_MAX, a, sizeof a), "delack_max_us") != 0 ||
	    st_opt_shape(ST_V_RCVBUF) != ST_SHAPE_GROUP || st_opt_shape(ST_V_NODELAY) != ST_SHAPE_FLAG ||
	    st_opt_shape(ST_V_CONGESTION) != ST_SHAPE_NAME || st_opt_shape(ST_V_MARK) != ST_SHAPE_INT)
		CASE_FAIL("shapes: delack_max's key %s", a);
	end_group("outcome_names");
}

int main(void)
{
	policy_all();
	end_group("outcome_policy");
	test_same_keys();
	test_known_lines();
	test_backlog();
	test_names();
	return failures ? 1 : 0;
}
