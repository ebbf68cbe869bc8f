/* check's output, text and JSON from one walk (checksay.h): each call says one value, as a
 * member of the record under --json, else as text. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "socktune_kernel.h"
#include "check/checksay.h"

void say_begin(struct say *s, int json, FILE *f)
{
	memset(s, 0, sizeof *s);
	s->f = f;
	s->json = json;
	if (json)
		s->open[0] = rec_new(); /* (NULL: out of memory, said by rec_write_json) */
}

void say_end(struct say *s)
{
	if (!s->json)
		return;
	rec_write_json(s->f, s->open[0]);
	rec_free(s->open[0]);
	s->open[0] = NULL;
}

void say_hush(struct say *s, int hush)
{
	s->hush = hush;
}

/* The container said to (NULL when JSON is not written, or k is for the text only) */
static struct rec *to(const struct say *s, int k)
{
	return s->json && k != SAY_TEXT ? s->open[s->depth] : NULL;
}

static void text(const struct say *s, const char *fmt, const char *v)
{
	if (!s->json && !s->hush && fmt && v)
		fprintf(s->f, fmt, v);
}

void say_text(struct say *s, const char *fmt, ...)
{
	if (s->json || s->hush)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(s->f, fmt, ap);
	va_end(ap);
}

static void push(struct say *s, struct rec *c)
{
	if (s->depth + 1 < SAY_DEPTH)
		s->open[++s->depth] = c;
}

void say_obj(struct say *s, int k)
{
	if (s->json)
		push(s, rec_obj(to(s, k), k));
}

void say_arr(struct say *s, int k)
{
	if (s->json)
		push(s, rec_arr(to(s, k), k));
}

void say_group(struct say *s, int k)
{
	if (s->json)
		push(s, rec_group(to(s, k), k));
}

void say_close(struct say *s)
{
	if (s->json && s->depth > 0)
		s->depth--;
}

void say_str(struct say *s, int k, const char *fmt, const char *v)
{
	rec_str(to(s, k), k, v);
	text(s, fmt, v);
}

void say_name(struct say *s, int k, const char *fmt, const char *none, const char *v)
{
	int empty = !v || !*v;
	rec_str(to(s, k), k, empty ? NULL : v);
	text(s, fmt, empty ? none : v);
}

void say_int(struct say *s, int k, const char *fmt, long long v)
{
	char num[24];
	rec_int(to(s, k), k, v);
	snprintf(num, sizeof num, "%lld", v);
	text(s, fmt, num);
}

void say_known(struct say *s, int k, const char *fmt, const char *unknown, long long v)
{
	char num[24];
	rec_known(to(s, k), k, v);
	snprintf(num, sizeof num, "%lld", v);
	text(s, fmt, v < 0 ? unknown : num);
}

/* A byte count as people read one: 24 MiB, 703.1 GiB (powers of 1024, as the sizes the
 * options take); under 1 KiB in bytes. */
static const char *human(long long b, char *out, size_t n)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
	if (b < 1024) {
		snprintf(out, n, "%lld bytes", b);
		return out;
	}
	int u = 0;
	long long whole = 1024;
	while (u < 3 && b >= whole * 1024) {
		whole *= 1024;
		u++;
	}
	if (b % whole == 0)
		snprintf(out, n, "%lld %s", b / whole, unit[u]);
	else
		snprintf(out, n, "%.1f %s", (double)b / (double)whole, unit[u]);
	return out;
}

void say_bytes(struct say *s, int k, const char *fmt, long long v)
{
	char h[32];
	rec_known(to(s, k), k, v);
	text(s, fmt, v < 0 ? "unknown" : human(v, h, sizeof h));
}

void say_bool3(struct say *s, int k, const char *fmt, const char *yes, const char *no,
               const char *unknown, int v)
{
	if (v < 0)
		rec_null(to(s, k), k);
	else
		rec_bool(to(s, k), k, v);
	text(s, fmt, v < 0 ? unknown : v ? yes : no);
}

void say_bool(struct say *s, int k, const char *fmt, const char *yes, const char *no, int v)
{
	say_bool3(s, k, fmt, yes, no, NULL, v != 0);
}

/* In JSON: the number v holds, or its words as an array */
static void read_json(struct rec *at, int k, const char *v, int words)
{
	char *end;
	if (!*v) {
		rec_null(at, k);
		return;
	}
	if (words == 0) {
		long long num = strtoll(v, &end, 10);
		if (*end == '\0' && end != v)
			rec_int(at, k, num);
		else
			rec_null(at, k); /* not the number it should be */
		return;
	}
	struct rec *list = rec_arr(at, k);
	for (int n = 0; *v && n < 64; n++) {
		v += strspn(v, " ");
		size_t len = strcspn(v, " ");
		if (!len)
			break;
		char word[128];
		snprintf(word, sizeof word, "%.*s", (int)len, v);
		long long num = strtoll(word, &end, 10);
		if (words > 0 && *end == '\0')
			rec_int(list, 0, num);
		else
			rec_str(list, 0, word);
		v += len;
	}
}

void say_read(struct say *s, int k, const char *fmt, const char *v, int words)
{
	if (to(s, k))
		read_json(to(s, k), k, v, words);
	text(s, fmt, *v ? v : "unavailable");
}

void say_fix(struct say *s, const char *fmt, const char *fix)
{
	if (s->json) {
		char cmd[640]; /* (a verdict's fix is 200 bytes) */
		const char *note = st_fix_split(fix, cmd, sizeof cmd);
		struct rec *list = rec_arr(to(s, K_FIX), K_FIX);
		if (cmd[0])
			rec_str(list, 0, cmd);
		rec_str(to(s, K_NOTE), K_NOTE, *note ? note : NULL);
	}
	text(s, *fix ? fmt : NULL, fix);
}
