/* The one JSON string writer of the command (check --json, stats --json).  The library
 * links it with the rest of common/ but never calls it. */
#include <stdio.h>

#include "socktune_json.h"

/* The length of the UTF-8 sequence at u, or 0 when it is not one: no overlong forms, no
 * surrogates, nothing past U+10FFFF.  Stops at a NUL (it is no continuation byte). */
int st_utf8_len(const unsigned char *u)
{
	unsigned char c = *u;
	int len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
	int ok = len > 0 && (c < 0xf0 || len == 4);
	for (int k = 1; ok && k < len; k++)
		ok = (u[k] & 0xc0) == 0x80;
	if (ok && ((c == 0xe0 && u[1] < 0xa0) || (c == 0xed && u[1] >= 0xa0) ||
	           (c == 0xf0 && u[1] < 0x90) || (c == 0xf4 && u[1] >= 0x90)))
		ok = 0;
	return ok ? len : 0;
}

void st_json_str(FILE *f, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	fputc('"', f);
	while (*u) {
		unsigned char c = *u;
		if (c == '"' || c == '\\') {
			fprintf(f, "\\%c", c);
			u++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			u++;
		} else if (c < 0x80) {
			fputc(c, f);
			u++;
		} else if (u[0] == 0xc2 && u[1] >= 0x80 && u[1] < 0xa0) {
			/* C1 controls (U+0080-U+009F, CSI among them) escaped too: a terminal that
			 * shows the document would obey them */
			fprintf(f, "\\u%04x", u[1]);
			u += 2;
		} else {
			int len = st_utf8_len(u);
			if (len) {
				fwrite(u, 1, (size_t)len, f);
				u += len;
			} else {
				fputs("\\ufffd", f);
				u++;
			}
		}
	}
	fputc('"', f);
}
