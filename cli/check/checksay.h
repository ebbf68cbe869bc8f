/* check's output, text and JSON from one walk (iproute2's json_print: print_string(PRINT_ANY,
 * "key", "fmt", v)).  Each call says one value: under --json a member of the object open (an
 * item of the array open) under record.h's key k, else a piece of text, fmt with the value
 * as a string (every fmt takes one %s).  fmt NULL: said in JSON only (the text tells it
 * otherwise, or not at all); k SAY_TEXT: in the text only. */
#ifndef CHECKSAY_H
#define CHECKSAY_H

#include <stdio.h>

#include "record.h"

#define SAY_TEXT (-1)
#define SAY_DEPTH 8

struct say {
	FILE *f;
	int json;
	struct rec *open[SAY_DEPTH]; /* --json: the document, then each object or array open */
	int depth;
	int hush;                    /* the text leaves this part out: said in JSON only */
};

/* A document on f: text, or JSON (written whole, and freed, by say_end). */
void say_begin(struct say *s, int json, FILE *f);
void say_end(struct say *s);
/* The text leaves out what follows (1) until said again (0). */
void say_hush(struct say *s, int hush);

/* Text only: no value, or a sentence made of several. */
void say_text(struct say *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A member that holds others, and the end of the last one opened. */
void say_obj(struct say *s, int k);
void say_arr(struct say *s, int k);
void say_group(struct say *s, int k);
void say_close(struct say *s);

void say_str(struct say *s, int k, const char *fmt, const char *v); /* v NULL: null, no text */
/* A string that may be empty: null in JSON then, none in the text (NULL: no text) */
void say_name(struct say *s, int k, const char *fmt, const char *none, const char *v);
void say_int(struct say *s, int k, const char *fmt, long long v);
/* A number that is unknown when negative: null in JSON then, unknown in the text (NULL: no
 * text); bytes: in the text as people read them (24 MiB, 703.1 GiB) */
void say_known(struct say *s, int k, const char *fmt, const char *unknown, long long v);
void say_bytes(struct say *s, int k, const char *fmt, long long v);
/* A boolean, in the text the word for it; v < 0: unknown (null; NULL: no text) */
void say_bool(struct say *s, int k, const char *fmt, const char *yes, const char *no, int v);
void say_bool3(struct say *s, int k, const char *fmt, const char *yes, const char *no,
               const char *unknown, int v);
/* A value read as text (a sysctl): in the text as read, in JSON a number (words 0) or an
 * array of its blank-separated words (numbers when words > 0, names when < 0); null when
 * empty or not the number it should be */
void say_read(struct say *s, int k, const char *fmt, const char *v, int words);
/* A fix as the library logs it: in JSON its command in "fix" (an array: none, or one) and
 * its prose in "note" (null when none); in the text whole, through fmt, when there is one */
void say_fix(struct say *s, const char *fmt, const char *fix);

#endif
