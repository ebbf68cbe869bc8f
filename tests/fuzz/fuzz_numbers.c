/* st_parse_size, st_parse_int, st_parse_bool, st_parse_log_level, the durations (st_parse_usec,
 * st_parse_msec): whatever they accept is in range; whatever they refuse comes with a
 * message. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	char err[160];
	long long v;
	static const long long ranges[][2] = {{1, 1073741824}, {0, 2147483647}, {0, 6},
	                                      {0, 4294967295LL}, {1, 2147483647}};
	for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
		err[0] = 'x';
		if (st_parse_size(s, ranges[i][0], ranges[i][1], &v, err, sizeof err) == 0)
			FUZZ_ASSERT(v >= ranges[i][0] && v <= ranges[i][1]);
		else
			fuzz_check_err(err, sizeof err);
		if (st_parse_int(s, ranges[i][0], ranges[i][1], &v, err, sizeof err) == 0)
			FUZZ_ASSERT(v >= ranges[i][0] && v <= ranges[i][1]);
		else
			fuzz_check_err(err, sizeof err);
	}
	static const long long durations[][2] = {{4001, 200000}, {1000, 120000}, {1, 120000000}};
	for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
		if (st_parse_usec(s, durations[i][0], durations[i][1], &v, err, sizeof err) == 0)
			FUZZ_ASSERT(v >= durations[i][0] && v <= durations[i][1]);
		else
			fuzz_check_err(err, sizeof err);
		if (st_parse_msec(s, durations[i][0], durations[i][1], &v, err, sizeof err) == 0)
			FUZZ_ASSERT(v >= durations[i][0] && v <= durations[i][1]);
		else
			fuzz_check_err(err, sizeof err);
	}
	if (st_parse_bool(s, &v, err, sizeof err) == 0)
		FUZZ_ASSERT(v == 0 || v == 1);
	if (st_parse_log_level(s, &v, err, sizeof err) == 0)
		FUZZ_ASSERT(v >= ST_LOG_OFF && v <= ST_LOG_DEBUG);
	/* tiny error buffers must be honoured too */
	char small[1];
	st_parse_size(s, 1, 10, &v, small, sizeof small);
	st_parse_int(s, 1, 10, &v, small, sizeof small);
	st_parse_msec(s, 1, 10, &v, small, sizeof small);
	free(s);
	return 0;
}
