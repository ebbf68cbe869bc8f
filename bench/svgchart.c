/* Writes the benchmark's chart as a self-contained SVG (no plotting dependency): one panel
 * per case, each series a file of latencies in microseconds (one a line), drawn sorted so
 * that every point is one request and the x axis reads as "fraction of requests".  The y
 * axis is logarithmic, 10 us to 10 s.
 *
 *   svgchart OUT.svg "CAPTION" "TITLE;THRESHOLD_US;LABEL,COLOR,FILE;LABEL,COLOR,FILE..." ...
 */
#include <math.h>

#include "bench.h"

#define PW 400 /* panel width and height, and the plot area inside it */
#define PH 330
#define ML 58
#define MR 14
#define MT 40
#define MB 46
#define YMIN 1.0  /* log10(10 us) */
#define YMAX 7.0  /* log10(10 s) */
#define MAXS 8

struct series {
	char label[128], color[32];
	int64_t *v;
	size_t n;
};

static size_t load(const char *path, int64_t **out)
{
	FILE *f = fopen(path, "r");
	size_t n = 0, cap = 256;
	int64_t *v = malloc(cap * sizeof *v);
	long long x;
	if (!v)
		die("malloc");
	if (f) {
		while (fscanf(f, "%lld", &x) == 1) {
			if (n == cap && !(v = realloc(v, (cap *= 2) * sizeof *v)))
				die("realloc");
			v[n++] = x;
		}
		fclose(f);
	}
	qsort(v, n, sizeof *v, cmp_i64);
	*out = v;
	return n;
}

static double ypos(double us)
{
	double l = log10(us < 10 ? 10 : us);
	if (l > YMAX)
		l = YMAX;
	return MT + (PH - MT - MB) * (YMAX - l) / (YMAX - YMIN);
}

static void fmt_ms(char *b, size_t n, double us)
{
	if (us < 1000)
		snprintf(b, n, "%.2f ms", us / 1000);
	else if (us < 100000)
		snprintf(b, n, "%.1f ms", us / 1000);
	else
		snprintf(b, n, "%.0f ms", us / 1000);
}

static void panel(FILE *o, int x0, char *spec)
{
	char *save = NULL;
	char *title = strtok_r(spec, ";", &save);
	char *thr = strtok_r(NULL, ";", &save);
	struct series s[MAXS];
	int ns = 0;
	char *tok;
	while (ns < MAXS && (tok = strtok_r(NULL, ";", &save)) != NULL) {
		char *s2 = NULL;
		char *label = strtok_r(tok, ",", &s2), *color = strtok_r(NULL, ",", &s2),
		     *path = strtok_r(NULL, ",", &s2);
		if (!label || !color || !path)
			continue;
		snprintf(s[ns].label, sizeof s[ns].label, "%s", label);
		snprintf(s[ns].color, sizeof s[ns].color, "%s", color);
		s[ns].n = load(path, &s[ns].v);
		ns++;
	}
	int pl = x0 + ML, pr = x0 + PW - MR, pb = PH - MB;
	fprintf(o, "<text x=\"%d\" y=\"22\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", x0 + 8,
	        title ? title : "");
	static const char *ticks[] = {"0.01", "0.1", "1", "10", "100", "1000", "10000"};
	for (int d = 0; d <= 6; d++) {
		double y = ypos(pow(10, YMIN + d));
		fprintf(o,
		        "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
		        "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>\n",
		        pl, y, pr, y, pl - 4, y + 3, ticks[d]);
	}
	for (int q = 0; q <= 4; q++) {
		double x = pl + (pr - pl) * q / 4.0;
		fprintf(o,
		        "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
		        "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d%%</text>\n",
		        x, MT, x, pb, x, pb + 13, q * 25);
	}
	fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n",
	        pl, MT, pr - pl, pb - MT);
	fprintf(o,
	        "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">requests, sorted by "
	        "latency</text>\n<text transform=\"translate(%d,%d) rotate(-90)\" font-size=\"11\" "
	        "text-anchor=\"middle\">latency (ms, log)</text>\n",
	        (pl + pr) / 2, pb + 30, x0 + 14, (MT + pb) / 2);
	long t = thr ? strtol(thr, NULL, 10) : 0;
	if (t > 0) {
		char b[32];
		fmt_ms(b, sizeof b, (double)t);
		fprintf(o,
		        "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\" "
		        "stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"%.1f\" font-size=\"10\" "
		        "text-anchor=\"end\">%s</text>\n",
		        pl, ypos((double)t), pr, ypos((double)t), pr - 3, ypos((double)t) - 3, b);
	}
	for (int i = 0; i < ns; i++) {
		if (!s[i].n)
			continue;
		fprintf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", s[i].color);
		for (size_t k = 0; k < s[i].n; k++)
			fprintf(o, "%.1f,%.1f ", pl + (pr - pl) * (k + 0.5) / (double)s[i].n,
			        ypos((double)s[i].v[k]));
		fputs("\"/>\n", o);
		char med[32];
		fmt_ms(med, sizeof med, (double)pct(s[i].v, s[i].n, 50));
		int ly = MT + 14 + 15 * i;
		fprintf(o,
		        "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"4\" fill=\"%s\"/>"
		        "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s (n=%zu, p50 %s)</text>\n",
		        pl + 8, ly - 4, s[i].color, pl + 24, ly, s[i].label, s[i].n, med);
		free(s[i].v);
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fputs("usage: svgchart OUT.svg CAPTION PANEL...\n", stderr);
		return 2;
	}
	int np = argc - 3, w = PW * np, h = PH + 24;
	FILE *o = fopen(argv[1], "w");
	if (!o)
		die("open %s", argv[1]);
	fprintf(o,
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
	        "%d\" font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
	        "fill=\"#fff\"/>\n",
	        w, h, w, h);
	for (int i = 0; i < np; i++)
		panel(o, PW * i, argv[3 + i]);
	fprintf(o, "<text x=\"8\" y=\"%d\" font-size=\"11\" fill=\"#444\">%s</text>\n</svg>\n", h - 8,
	        argv[2]);
	if (fclose(o) != 0)
		die("write %s", argv[1]);
	return 0;
}
