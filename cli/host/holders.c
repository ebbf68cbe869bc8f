/* Which process holds which socket: /proc/PID/fd read once, sorted by inode, so each of
 * thousands of sockets finds its holders by a binary search.  (doctor's; attach walks one
 * process's descriptors itself, taking a copy of each.) */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "socktune_json.h"
#include "host/diag.h"
#include "host/grow.h"

void holders_add(struct holders *hs, unsigned long long ino, int pid, int fd)
{
	if (grow(&hs->h, &hs->cap, hs->n, sizeof *hs->h, 4096) == 0)
		hs->h[hs->n++] = (struct holder){ino, pid, fd};
}

static void scan_pid(struct holders *hs, int pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", pid);
	DIR *d = opendir(path);
	for (struct dirent *e; d && (e = readdir(d));) {
		char *end, link[64], lpath[96];
		long fd = strtol(e->d_name, &end, 10);
		unsigned long long ino;
		if (*end || end == e->d_name)
			continue;
		snprintf(lpath, sizeof lpath, "%s/%ld", path, fd);
		ssize_t n = readlink(lpath, link, sizeof link - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (sscanf(link, "socket:[%llu]", &ino) == 1)
			holders_add(hs, ino, pid, (int)fd);
	}
	if (d)
		closedir(d);
}

static int by_ino(const void *a, const void *b)
{
	const struct holder *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino ? 1 : x->pid - y->pid;
}

void holders_scan(struct holders *hs, const int *pids, int npids)
{
	hs->n = 0;
	if (pids) {
		for (int k = 0; k < npids; k++)
			scan_pid(hs, pids[k]);
	} else {
		DIR *proc = opendir("/proc");
		for (struct dirent *e; proc && (e = readdir(proc));) {
			char *end;
			long pid = strtol(e->d_name, &end, 10);
			if (!*end && end != e->d_name && pid > 0 && pid <= INT_MAX)
				scan_pid(hs, (int)pid);
		}
		if (proc)
			closedir(proc);
	}
	if (hs->n)
		qsort(hs->h, hs->n, sizeof *hs->h, by_ino);
}

const struct holder *holders_find(const struct holders *hs, unsigned long long ino)
{
	size_t lo = 0, hi = hs->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (hs->h[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < hs->n && hs->h[lo].ino == ino ? &hs->h[lo] : NULL;
}

void comm_of(int pid, char *out, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/comm", pid);
	FILE *f = fopen(path, "re");
	out[0] = '\0';
	if (f && fgets(out, (int)n, f))
		out[strcspn(out, "\n")] = '\0';
	if (f)
		fclose(f);
}

int ppid_of(int pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses, the last ')'
	 * ends it */
	char *close = strrchr(buf, ')');
	int ppid;
	return close && sscanf(close + 1, " %*c %d", &ppid) == 1 ? ppid : -1;
}

unsigned long long netns_of(int pid)
{
	char path[64];
	struct stat sb;
	if (pid > 0)
		snprintf(path, sizeof path, "/proc/%d/ns/net", pid);
	else
		snprintf(path, sizeof path, "/proc/self/ns/net");
	return stat(path, &sb) == 0 ? (unsigned long long)sb.st_ino : 0;
}


int doc_printable_len(const unsigned char *u)
{
	if (*u < 0x20 || *u == 0x7f)
		return 0;
	if (*u < 0x80)
		return 1;
	int n = st_utf8_len(u);
	return n && !(u[0] == 0xc2 && u[1] < 0xa0) ? n : 0; /* (C1 controls: U+0080-U+009F) */
}

void doc_say(char *buf, size_t n, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;
	va_start(ap, fmt);
	if (used < n)
		vsnprintf(buf + used, n - used, fmt, ap);
	va_end(ap);
}

void doc_quote(char *out, size_t n, const char *arg)
{
	int plain = *arg != '\0';
	for (const char *c = arg; *c; c++)
		plain &= !!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		                  "0123456789-_./=:,+@%", *c);
	if (plain) {
		doc_say(out, n, "%s", arg);
		return;
	}
	doc_say(out, n, "'");
	for (const char *c = arg; *c; c++)
		doc_say(out, n, *c == '\'' ? "'\\''" : "%c", *c);
	doc_say(out, n, "'");
}

void cmdline_of(int pid, char *out, size_t n)
{
	char path[64], raw[4096];
	snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
	FILE *f = fopen(path, "re");
	size_t len = f ? fread(raw, 1, sizeof raw, f) : 0;
	if (f)
		fclose(f);
	out[0] = '\0';
	if (!len) {
		snprintf(out, n, "PROGRAM (the command line of %d is not readable here)", pid);
		return;
	}
	if (len == sizeof raw) {
		snprintf(out, n, "PROGRAM (the command line of %d is too long to show)", pid);
		return;
	}
	raw[len] = '\0';
	int args = 0;
	for (size_t k = 0; k < len; k += strlen(raw + k) + 1)
		args++;
	if (args == 1 && strchr(raw, ' ')) { /* argv rewritten as a title: nginx, postgres */
		char exe[256];
		snprintf(path, sizeof path, "/proc/%d/exe", pid);
		ssize_t e = readlink(path, exe, sizeof exe - 1);
		snprintf(out, n, "%s (its start command: %d shows only the title '%.100s')",
		         e > 0 ? (exe[e] = '\0', exe) : "PROGRAM", pid, raw);
		return;
	}
	for (size_t k = 0; k < len; k += strlen(raw + k) + 1) {
		doc_say(out, n, "%s", k ? " " : "");
		doc_quote(out, n, raw + k);
	}
	if (strlen(out) + 1 >= n)
		snprintf(out, n, "PROGRAM (the command line of %d is too long to show)", pid);
}
