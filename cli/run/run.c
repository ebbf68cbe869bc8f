/* socktune [OPTIONS] PROGRAM: find the library, put it first in LD_PRELOAD, warn about a
 * program LD_PRELOAD cannot reach (stderr and SOCKTUNE_LOG_FILE), and exec the program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_host.h"
#include "socktune_kernel.h"
#include "run/run.h"
#include "host/inspect.h"

static void self_path(const char *argv0, char *out)
{
	ssize_t n = readlink("/proc/self/exe", out, PATH_MAX - 1);
	if (n > 0) {
		out[n] = '\0';
		return;
	}
	/* No /proc (a bare container): argv[0] as the shell found it. */
	if (!strchr(argv0, '/') || !realpath(argv0, out))
		out[0] = '\0';
}

/* The library to preload, into lib; -1 with a message on stderr when there is none. */
static int find_library(const char *argv0, char *lib)
{
	const char *env = getenv(ST_ENV_LIBRARY);
	if (env && *env) {
		if (!realpath(env, lib) || access(lib, R_OK) != 0) {
			usage_error(stderr, "%s=%s: %s", ST_ENV_LIBRARY, env, strerror(errno));
			return -1;
		}
		return 0;
	}
	char self[PATH_MAX], try[PATH_MAX + 32];
	self_path(argv0, self);
	char *slash = strrchr(self, '/');
	if (!slash) {
		usage_error(stderr, "cannot tell where this command is (no /proc/self/exe); set %s",
		            ST_ENV_LIBRARY);
		return -1;
	}
	*slash = '\0';
	/* Beside the command (the build directory), then where make install put it: the
	 * library directory as seen from the command's (ST_LIBDIR_FROM_BIN, from the Makefile's
	 * LIBDIR: ../lib, or ../lib/<multiarch>/socktune in the Debian package), so an
	 * installed tree works wherever it is unpacked. */
	static const char *const places[] = {"/libsocktune.so",
	                                     "/" ST_LIBDIR_FROM_BIN "/libsocktune.so"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(try, sizeof try, "%s%s", self, places[i]);
		if (realpath(try, lib) && access(lib, R_OK) == 0)
			return 0;
	}
	usage_error(stderr, "libsocktune.so not found in %s or %s/%s; set %s", self, self,
	            ST_LIBDIR_FROM_BIN, ST_ENV_LIBRARY);
	return -1;
}

static int is_our_library(const char *entry, const char *lib)
{
	char real[PATH_MAX];
	const char *base = strrchr(entry, '/');
	base = base ? base + 1 : entry;
	/* Another copy of libsocktune would hook the same calls a second time. */
	return strcmp(base, "libsocktune.so") == 0 || strcmp(entry, lib) == 0 ||
	       (realpath(entry, real) && strcmp(real, lib) == 0);
}

/* LD_PRELOAD = lib, then every earlier entry that is not libsocktune, in order.  ld.so
 * splits the list at ':' and ' '.  -1 with a message on stderr when it cannot. */
static int compose_preload(const char *lib)
{
	if (strpbrk(lib, ": \t\n")) {
		usage_error(stderr, "%s: a library path with ':' or blanks cannot go into LD_PRELOAD",
		            lib);
		return -1;
	}
	const char *old = getenv("LD_PRELOAD");
	size_t cap = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *out = malloc(cap), *copy = strdup(old ? old : "");
	int r = 0;
	if (!out || !copy) {
		free(out);
		free(copy);
		usage_error(stderr, "out of memory");
		return -1;
	}
	size_t o = (size_t)snprintf(out, cap, "%s", lib);
	char *save = NULL;
	for (char *tok = strtok_r(copy, ": \t", &save); tok; tok = strtok_r(NULL, ": \t", &save)) {
		if (is_our_library(tok, lib))
			continue;
		o += (size_t)snprintf(out + o, cap - o, ":%s", tok);
	}
	if (setenv("LD_PRELOAD", out, 1) != 0) {
		usage_error(stderr, "LD_PRELOAD: %s", strerror(errno));
		r = -1;
	}
	free(out);
	free(copy);
	return r;
}

/* For a logfmt value: quotes, backslashes, control characters and every byte outside ASCII
 * become '?' (the library's st_sanitize keeps valid UTF-8; it lives in log.c, which the
 * command does not link, and a program path needs no more than this). */
static void logfmt_value(const char *s, char *out, size_t n)
{
	size_t o = 0;
	for (; *s && o + 1 < n; s++) {
		unsigned char c = (unsigned char)*s;
		out[o++] = (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	if (n)
		out[o] = '\0';
}

/* A warning of the command also goes to SOCKTUNE_LOG_FILE (appended, in the library's
 * line format), where the operator reads the library's lines: the program runs in this
 * process once exec'd, so %p is our pid, the pid its own lines will carry. */
static void log_file_line(const struct st_policy *p, int level, const char *line)
{
	static const char *const names[] = {"off", "error", "warn", "info", "debug"};
	int want = st_has(p, ST_V_LOG) ? (int)p->num[ST_V_LOG] : ST_LOG_INFO;
	char path[sizeof p->log_file + 24];
	if (!st_has(p, ST_V_LOG_FILE) || level > want ||
	    st_expand_path(p->log_file, (long)getpid(), path, sizeof path) != 0)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
	                            O_NONBLOCK, 0644);
	struct stat st;
	if (fd < 0)
		return; /* the library says why with its first line */
	char buf[2 * PATH_MAX + 512];
	int n = snprintf(buf, sizeof buf, "socktune pid=%ld level=%s %s\n", (long)getpid(),
	                 names[level], line);
	if (fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) ||
	                            S_ISCHR(st.st_mode)) && n > 0 && (size_t)n < sizeof buf &&
	    write(fd, buf, (size_t)n) < 0) {
		/* a full disk or a FIFO without room: stderr has the warning already */
	}
	close(fd);
}

static int warn_program(const struct st_policy *p, const char *name, int strict)
{
	char path[PATH_MAX], judged[PATH_MAX];
	if (resolve_program(name, path) != 0)
		return 0; /* execvp will say so */
	unsigned flags = inspect_program(path, judged, 0);
	static const struct {
		unsigned flag;
		const char *reason, *why;
	} reasons[] = {
		{P_STATIC, "static",
		 "is statically linked (no ELF interpreter): LD_PRELOAD cannot reach it"},
		{P_GO, "go", "is a Go program: Go makes its socket calls without libc, past libsocktune"},
		{P_SETID, "setid",
		 "is setuid/setgid: the loader drops LD_PRELOAD when that raises privileges"},
		{P_CAPS, "file-caps",
		 "has file capabilities (security.capability): the loader drops LD_PRELOAD"},
	};
	char shown[PATH_MAX], shown_path[PATH_MAX], line[3 * PATH_MAX];
	logfmt_value(judged, shown, sizeof shown);
	logfmt_value(path, shown_path, sizeof shown_path);
	int n = 0;
	for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
		if (!(flags & reasons[i].flag))
			continue;
		n++;
		/* (with what reaches it: from outside, or from its cgroup in the kernel) */
		fprintf(stderr, "socktune: %s: %s%s%s %s; %s (socktune --attach or socktune --cgroup "
		        "in front of the command; once it runs, socktune attach PID or socktune attach "
		        "--cgroup PID)\n", strict ? "error" : "warning", judged,
		        strcmp(judged, path) ? ", the interpreter of " : "",
		        strcmp(judged, path) ? path : "", reasons[i].why,
		        strict ? "not started (--strict)" : "it runs untuned");
		snprintf(line, sizeof line,
		         "event=unreachable program=\"%s\"%s%s%s reason=%s detail=\"%s\" action=%s", shown,
		         strcmp(judged, path) ? " interpreter_of=\"" : "",
		         strcmp(judged, path) ? shown_path : "", strcmp(judged, path) ? "\"" : "",
		         reasons[i].reason, reasons[i].why, strict ? "refused" : "untuned");
		log_file_line(p, strict ? ST_LOG_ERROR : ST_LOG_WARN, line);
	}
	return n;
}

/* The README promises every value is checked before anything runs: a congestion control
 * name is, against the kernel's (the library would only log a failed setsockopt on each
 * listener).  An algorithm neither available nor an installed module is missing: refused.
 * One available to programs with CAP_NET_ADMIN only, or a module not loaded yet, runs: the
 * library says so, with its fix, if the program turns out to lack the capability. */
int congestion_missing(const struct cli *c, const struct st_policy *p)
{
	char avail[512], why[700], fix[600];
	if (!st_has(p, ST_V_CONGESTION) ||
	    st_sysctl_str("net.ipv4.tcp_available_congestion_control", avail, sizeof avail) != 0)
		return 0;
	const char *name = p->name[ST_V_CONGESTION];
	if (st_has_word(avail, name) || st_congestion_module(name))
		return 0;
	st_why_congestion(name, avail, "", 0, why, sizeof why, fix, sizeof fix);
	if (c->given[ST_V_CONGESTION])
		usage_error(stderr, "--%s %s: %s", st_vars[ST_V_CONGESTION].option, name, why);
	else
		usage_error(stderr, "%s=%s: %s", st_vars[ST_V_CONGESTION].env, name, why);
	return 1;
}

/* socktune --print-library: the path run mode puts first in LD_PRELOAD, for the LD_PRELOAD=
 * line of a unit file or a script that preloads without the wrapper. */
int print_library(const char *argv0)
{
	char lib[PATH_MAX];
	if (find_library(argv0, lib) != 0)
		return EXIT_USAGE;
	printf("%s\n", lib);
	return fflush(stdout) == 0 ? 0 : 1;
}

int run_main(const struct cli *c, const struct st_policy *p, const char *argv0)
{
	if (!c->program) {
		usage_error(stderr, "no program to run (usage: socktune [OPTIONS] [--] PROGRAM "
		            "[ARGS...]; see --help)");
		return EXIT_USAGE;
	}
	char lib[PATH_MAX];
	if (find_library(argv0, lib) != 0 || compose_preload(lib) != 0)
		return EXIT_USAGE;
	if (warn_program(p, c->program[0], c->strict) && c->strict)
		return EXIT_USAGE;
	fflush(NULL);
	execvp(c->program[0], c->program);
	int e = errno;
	fprintf(stderr, "socktune: %s: %s\n", c->program[0],
	        e == ENOENT ? "command not found" : strerror(e));
	return e == ENOENT ? 127 : 126;
}
