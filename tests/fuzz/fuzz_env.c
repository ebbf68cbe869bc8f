/* st_policy_from_env: the whole environment block (entries separated by newlines).  Every
 * value it keeps is in its variable's range; every error is reported with a name; the
 * number of errors matches the callbacks. */
#include "fuzz.h"

static int calls;
static void on_error(void *ctx, const char *name, const char *value, const char *msg)
{
	(void)ctx;
	FUZZ_ASSERT(name && value && msg && strncmp(name, "SOCKTUNE_", 9) == 0);
	calls++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	char *envp[256];
	size_t n = 0;
	for (char *line = s; line && n < 255;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		envp[n++] = line;
		line = nl ? nl + 1 : NULL;
	}
	envp[n] = NULL;
	struct st_policy p;
	memset(&p, 0, sizeof p);
	calls = 0;
	int errors = st_policy_from_env(&p, envp, on_error, NULL);
	FUZZ_ASSERT(errors == calls);
	for (int i = 0; i < ST_V_COUNT; i++) {
		if (!st_has(&p, (enum st_var_id)i))
			continue;
		enum st_type t = st_vars[i].type;
		if (t == ST_T_SIZE || t == ST_T_INT || t == ST_T_BOOL || t == ST_T_LOGLEVEL ||
		    t == ST_T_TOS || t == ST_T_PRECEDENCE || st_duration_unit(t))
			FUZZ_ASSERT(p.num[i] >= st_vars[i].min && p.num[i] <= st_vars[i].max);
	}
	for (int i = 0; i < ST_V_COUNT; i++)
		FUZZ_ASSERT(memchr(p.name[i], '\0', sizeof p.name[i]) != NULL);
	FUZZ_ASSERT(memchr(p.log_file, '\0', sizeof p.log_file) != NULL);
	free(s);
	return 0;
}
