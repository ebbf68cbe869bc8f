/* st_parse_tos, st_parse_name, st_expand_path: TOS in 0..255; a name fits TCP_CA_NAME_MAX
 * and holds only [A-Za-z0-9_-]; an expanded path is terminated inside its buffer. */
#include <ctype.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	char err[160];
	long long v;
	if (st_parse_tos(s, &v, err, sizeof err) == 0)
		FUZZ_ASSERT(v >= 0 && v <= 255);
	char name[16];
	memset(name, 'Z', sizeof name);
	if (st_parse_name(s, name, sizeof name, err, sizeof err) == 0) {
		FUZZ_ASSERT(memchr(name, '\0', sizeof name) != NULL);
		for (const char *c = name; *c; c++)
			FUZZ_ASSERT(isalnum((unsigned char)*c) || *c == '_' || *c == '-');
	}
	char path[64];
	if (st_expand_path(s, 4194304, path, sizeof path) == 0)
		FUZZ_ASSERT(memchr(path, '\0', sizeof path) != NULL && path[0] != '\0');
	free(s);
	return 0;
}
