/* st_parse_ports: on success only ports 1..65535 are set; on failure the set is untouched. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	char err[160];
	uint64_t bits[ST_PORTS_WORDS];
	memset(bits, 0xa5, sizeof bits);
	if (st_parse_ports(s, bits, err, sizeof err) == 0) {
		FUZZ_ASSERT(!st_port_in(bits, 0));
		FUZZ_ASSERT(!st_port_in(bits, 65536));
	} else {
		for (size_t i = 0; i < ST_PORTS_WORDS; i++)
			FUZZ_ASSERT(bits[i] == 0xa5a5a5a5a5a5a5a5ull);
		fuzz_check_err(err, sizeof err);
	}
	free(s);
	return 0;
}
