/* st_json_str (common/json.c), the writer of every JSON string the command prints: whatever
 * the bytes, the output is one JSON string of valid UTF-8, and it decodes to the input with
 * each byte that does not start a valid UTF-8 sequence replaced by U+FFFD.  The oracle
 * decodes code points itself rather than sharing the writer's byte table. */
#include "socktune_json.h"
#include "fuzz.h"

/* The length of the valid UTF-8 sequence at s (a code point of the shortest form, no
 * surrogate, at most U+10FFFF), or 0. */
static int utf8_seq(const unsigned char *s)
{
	unsigned c = s[0];
	int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
	if (!len)
		return 0;
	unsigned cp = c & (0x7f >> len);
	for (int k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	static const unsigned shortest[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < shortest[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int hex(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_str(data, size);
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	if (!f)
		abort();
	st_json_str(f, in);
	if (fclose(f) != 0)
		abort();

	/* expected: the input, each byte that starts no valid sequence as U+FFFD */
	size_t len = strlen(in);
	/* decoding never lengthens the output: n bytes are enough for what it decodes to */
	unsigned char *want = malloc(3 * len + 1), *got = malloc(n + 1);
	if (!want || !got)
		abort();
	size_t w = 0;
	for (const unsigned char *u = (const unsigned char *)in; *u;) {
		int k = *u < 0x80 ? 1 : utf8_seq(u);
		if (k) {
			memcpy(want + w, u, (size_t)k);
			w += (size_t)k, u += k;
		} else {
			memcpy(want + w, "\xef\xbf\xbd", 3);
			w += 3, u++;
		}
	}

	/* the output: quoted, escapes well formed, no raw control character, valid UTF-8 */
	const unsigned char *o = (const unsigned char *)out, *end = o + n;
	FUZZ_ASSERT(n >= 2 && o[0] == '"' && end[-1] == '"');
	size_t g = 0;
	for (o++, end--; o < end;) {
		FUZZ_ASSERT(*o >= 0x20 && *o != 0x7f && *o != '"');
		if (*o == '\\') {
			FUZZ_ASSERT(o + 1 < end);
			if (o[1] == '"' || o[1] == '\\') {
				got[g++] = o[1];
				o += 2;
				continue;
			}
			FUZZ_ASSERT(o[1] == 'u' && o + 6 <= end);
			int v = 0;
			for (int k = 2; k < 6; k++) {
				FUZZ_ASSERT(hex(o[k]) >= 0);
				v = v << 4 | hex(o[k]);
			}
			FUZZ_ASSERT(v < 0x20 || v == 0x7f || (v >= 0x80 && v < 0xa0) || v == 0xfffd);
			if (v == 0xfffd) {
				memcpy(got + g, "\xef\xbf\xbd", 3);
				g += 3;
			} else if (v >= 0x80) { /* a C1 control: U+0080-U+009F, two bytes in UTF-8 */
				got[g++] = 0xc2;
				got[g++] = (unsigned char)v;
			} else {
				got[g++] = (unsigned char)v;
			}
			o += 6;
			continue;
		}
		int k = *o < 0x80 ? 1 : utf8_seq(o);
		FUZZ_ASSERT(k > 0 && o + k <= end);
		FUZZ_ASSERT(!(o[0] == 0xc2 && o[1] < 0xa0)); /* no raw C1 control (CSI among them) */
		memcpy(got + g, o, (size_t)k);
		g += (size_t)k, o += k;
	}
	FUZZ_ASSERT(g == w && memcmp(got, want, w) == 0);
	free(want);
	free(got);
	free(out);
	free(in);
	return 0;
}
