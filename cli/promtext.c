/* The Prometheus text format's writer (promtext.h). */
#include "promtext.h"

#include "socktune_json.h"

void prom_head(FILE *out, const struct prom_family *f)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
}

void prom_label(FILE *out, int first, const char *name, const char *value)
{
	const unsigned char *u = (const unsigned char *)value;
	fprintf(out, "%s%s=\"", first ? "" : ",", name);
	while (*u) {
		if (*u == '\\' || *u == '"') {
			fprintf(out, "\\%c", *u++);
		} else if (*u == '\n') {
			fputs("\\n", out);
			u++;
		} else if (*u < 0x80) {
			fputc(*u++, out);
		} else {
			int len = st_utf8_len(u);
			fwrite(len ? (const void *)u : "\xef\xbf\xbd", 1, len ? (size_t)len : 3, out);
			u += len ? len : 1;
		}
	}
	fputc('"', out);
}
