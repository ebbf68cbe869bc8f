/* st_parse_keepalive: the parts are within the kernel's MAX_TCP_KEEPIDLE/INTVL/CNT. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	char err[160];
	long long on = -1;
	int idle = -1, intvl = -1, cnt = -1;
	if (st_parse_keepalive(s, &on, &idle, &intvl, &cnt, err, sizeof err) == 0) {
		FUZZ_ASSERT(on == 0 || on == 1);
		FUZZ_ASSERT(idle >= 0 && idle <= 32767 && intvl >= 0 && intvl <= 32767);
		FUZZ_ASSERT(cnt >= 0 && cnt <= 127);
	} else {
		fuzz_check_err(err, sizeof err);
	}
	free(s);
	return 0;
}
