/* JSON output of the command (common/json.c): `socktune check --json` and
 * `socktune stats --json` write their strings with the same writer. */
#ifndef SOCKTUNE_JSON_H
#define SOCKTUNE_JSON_H

#include <stdio.h>

/* s as a quoted JSON string: quotes, backslashes and control characters escaped; bytes that
 * are not UTF-8 become U+FFFD, so the output always parses whatever s holds. */
void st_json_str(FILE *f, const char *s);

/* The length of the UTF-8 character at u, or 0 when the bytes there are not one (overlong,
 * surrogate, past U+10FFFF, cut short): the test both writers of text from a file use. */
int st_utf8_len(const unsigned char *u);

#endif
