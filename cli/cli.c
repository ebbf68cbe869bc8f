/* The socktune command.
 *
 *   socktune [OPTIONS] [--] PROGRAM [ARGS...]   run PROGRAM with libsocktune preloaded
 *   socktune check [OPTIONS] [--json] [--strict] what this host will grant, and why
 *
 * Its options are not written here: they are the ST_VARIABLES table of socktune.h, and
 * every value is parsed by policy.c, the code the library itself runs.  The command turns
 * each option into the SOCKTUNE_* variable it mirrors, then validates the environment the
 * program will see exactly as the library will read it, so they cannot disagree.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_host.h"
#include "socktune_json.h"
#include "socktune_stats.h"

extern char **environ;

#define EXIT_USAGE 2 /* bad option or value, or --strict refused the program */

/* ---- messages ---- */

/* What a parser tells main: go on; print the help or the version (status 0); or stop with
 * EXIT_USAGE, its one-line message written.  No parser exits: main decides. */
enum cli_status { CLI_GO, CLI_HELP, CLI_VERSION, CLI_BAD };

/* One line, "socktune: " and the message, on f.  Returns CLI_BAD, so that a parser says
 * `return usage_error(msg, ...)`. */
static enum cli_status usage_error(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static enum cli_status usage_error(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("socktune: ", f);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	va_end(ap);
	return CLI_BAD;
}

/* ---- options: the ST_VARIABLES table, plus the command's own few ---- */

struct cli {
	int check, json, strict;
	char **program;                 /* argv of the program (run mode) */
	const char *given[ST_V_COUNT]; /* value from the command line, NULL if not given */
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: socktune [OPTIONS] [--] PROGRAM [ARGS...]\n"
	        "       socktune check [OPTIONS] [--json] [--strict]\n"
	        "       socktune stats [--json] [--watch SECONDS [--count N]] FILE\n"
	        "\n"
	        "Runs PROGRAM in place (same pid, its exit status) with libsocktune preloaded, which\n"
	        "tunes its TCP listeners and logs what the kernel applied.  'check' shows what this\n"
	        "host will grant for the same options, and why.\n"
	        "\n"
	        "Options (each sets the SOCKTUNE_* variable shown; given here, it wins over the\n"
	        "environment):\n");
	for (int i = 0; i < ST_V_COUNT; i++) {
		const struct st_var *v = &st_vars[i];
		char head[64];
		snprintf(head, sizeof head, "--%s%s%s", v->option, v->arg[0] ? " " : "", v->arg);
		fprintf(f, "  %-26s %s\n  %-26s [%s; default: %s]\n", head, v->help, "", v->env,
		        v->dflt);
	}
	fprintf(f,
	        "\n"
	        "Flags (options without an argument above) also take --FLAG=VALUE (1/0, yes/no,\n"
	        "on/off, true/false) and --no-FLAG (= 0).  Any option also takes --OPTION=VALUE.\n"
	        "\n"
	        "Command options:\n"
	        "  --strict     run: refuse (status 2) a program LD_PRELOAD cannot reach (statically\n"
	        "               linked, Go, setuid/setgid or file capabilities) instead of warning;\n"
	        "               check: exit 1 unless every configured value takes effect in full\n"
	        "  --json       check, stats: print JSON\n"
	        "  --watch S    stats: print again every S seconds (--count N times; default: until\n"
	        "               interrupted)\n"
	        "  --help, --version\n"
	        "\n"
	        "Options end at '--' or at the first argument that is not an option.  To run a\n"
	        "program named 'check': socktune -- check.\n"
	        "\n"
	        "Environment: SOCKTUNE_* as above; %s=PATH to use that library instead of the\n"
	        "one next to the command (./libsocktune.so, then ../lib/libsocktune.so).\n"
	        "\n"
	        "Exit status: the program's; 2 for a bad option or value (the program is not\n"
	        "started); 126 when the program cannot be executed, 127 when it is not found.\n",
	        ST_ENV_LIBRARY);
}

/* Parse argv into c.  Every value is checked by st_policy_set, the library's parser; what
 * it refuses is one line on msg and CLI_BAD. */
static enum cli_status parse_args(int argc, char **argv, struct cli *c, FILE *msg)
{
	int i = 1;
	if (i < argc && strcmp(argv[i], "check") == 0) {
		c->check = 1;
		i++;
	}
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break; /* the program */
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return CLI_HELP;
		if (strcmp(a, "--version") == 0)
			return CLI_VERSION;
		if (strcmp(a, "--strict") == 0) {
			c->strict = 1;
			continue;
		}
		if (strcmp(a, "--json") == 0) {
			if (!c->check)
				return usage_error(msg, "--json: only for 'socktune check'");
			c->json = 1;
			continue;
		}
		if (a[1] != '-')
			return usage_error(msg, "unknown option %s (see socktune --help)", a);

		const char *name = a + 2;
		const char *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		char key[64];
		if (len == 0 || len >= sizeof key)
			return usage_error(msg, "unknown option %s (see socktune --help)", a);
		memcpy(key, name, len);
		key[len] = '\0';

		int id = st_var_by_option(key), negated = 0;
		if (id < 0 && strncmp(key, "no-", 3) == 0) {
			id = st_var_by_option(key + 3);
			if (id >= 0 && st_vars[id].type != ST_T_BOOL)
				id = -1;
			negated = id >= 0;
		}
		if (id < 0)
			return usage_error(msg, "unknown option --%s (see socktune --help)", key);

		const char *val;
		if (negated) {
			if (eq)
				return usage_error(msg, "%s: --no-%s takes no value", a, key + 3);
			val = "0";
		} else if (st_vars[id].type == ST_T_BOOL) {
			val = eq ? eq + 1 : "1";
		} else if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			return usage_error(msg, "--%s: missing value (%s)", key, st_vars[id].arg);
		}

		struct st_policy scratch;
		char err[200];
		memset(&scratch, 0, sizeof scratch);
		if (st_policy_set(&scratch, (enum st_var_id)id, val, err, sizeof err) != 0)
			return usage_error(msg, "--%s %s: %s", negated ? key + 3 : key, val, err);
		c->given[id] = val;
	}
	c->program = i < argc ? argv + i : NULL;
	if (c->check && c->program)
		return usage_error(msg, "check: unexpected argument %s (check runs no program)",
		                   c->program[0]);
	return CLI_GO;
}

struct env_errors {
	FILE *msg;
	int n;
};

static void on_env_error(void *ctx, const char *name, const char *value, const char *msg)
{
	struct env_errors *e = ctx;
	e->n++;
	usage_error(e->msg, "%s=%s: %s", name, value, msg);
}

/* Put the command-line values into the environment, then read the whole environment the
 * way the library will: a bad SOCKTUNE_* value there stops us before anything runs (each
 * one a line on msg, then CLI_BAD).  A bad variable that an option replaces is gone, so it
 * is not an error. */
static enum cli_status build_policy(const struct cli *c, struct st_policy *p, FILE *msg)
{
	for (int i = 0; i < ST_V_COUNT; i++)
		if (c->given[i] && setenv(st_vars[i].env, c->given[i], 1) != 0)
			return usage_error(msg, "%s: %s", st_vars[i].env, strerror(errno));
	struct env_errors e = {msg, 0};
	memset(p, 0, sizeof *p);
	st_policy_from_env(p, environ, on_env_error, &e);
	return e.n ? CLI_BAD : CLI_GO;
}

/* ---- the library, and LD_PRELOAD ---- */

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
	static const char *const places[] = {"/libsocktune.so", "/../lib/libsocktune.so"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(try, sizeof try, "%s%s", self, places[i]);
		if (realpath(try, lib) && access(lib, R_OK) == 0)
			return 0;
	}
	usage_error(stderr, "libsocktune.so not found in %s or %s/../lib; set %s", self, self,
	            ST_ENV_LIBRARY);
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

/* ---- what LD_PRELOAD can reach: a look at the program's ELF file ---- */

enum { P_STATIC = 1, P_GO = 2, P_SETID = 4, P_CAPS = 8 };

/* The file execvp would run: a name with a slash as is, otherwise the first executable
 * regular file of that name along PATH. */
static int resolve(const char *name, char *out)
{
	if (strchr(name, '/')) {
		snprintf(out, PATH_MAX, "%s", name);
		return access(out, X_OK) == 0 ? 0 : -1;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct stat st;
		int w = snprintf(out, PATH_MAX, "%.*s%s%s", (int)len, p, len ? "/" : "", name);
		if (w > 0 && w < PATH_MAX && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(out, X_OK) == 0)
			return 0;
		if (!end)
			break;
		p = end + 1;
	}
	return -1;
}

static int read_at(int fd, void *buf, size_t n, off_t off)
{
	return pread(fd, buf, n, off) == (ssize_t)n ? 0 : -1;
}

/* Flags P_STATIC and P_GO for the ELF file on fd (native byte order only; anything else
 * is left alone: it would not run here anyway, or binfmt_misc runs it). */
static unsigned inspect_elf(int fd)
{
	unsigned char ident[EI_NIDENT];
	if (read_at(fd, ident, sizeof ident, 0) != 0 || memcmp(ident, ELFMAG, SELFMAG) != 0)
		return 0;
	const union {
		uint16_t u;
		unsigned char c[2];
	} order = {.u = 1};
	if (ident[EI_DATA] != (order.c[0] ? ELFDATA2LSB : ELFDATA2MSB))
		return 0;

	int is64 = ident[EI_CLASS] == ELFCLASS64;
	if (!is64 && ident[EI_CLASS] != ELFCLASS32)
		return 0;
	Elf64_Ehdr eh;
	if (is64) {
		if (read_at(fd, &eh, sizeof eh, 0) != 0)
			return 0;
	} else {
		Elf32_Ehdr e32;
		if (read_at(fd, &e32, sizeof e32, 0) != 0)
			return 0;
		eh.e_type = e32.e_type;
		eh.e_phoff = e32.e_phoff;
		eh.e_shoff = e32.e_shoff;
		eh.e_phnum = e32.e_phnum;
		eh.e_shnum = e32.e_shnum;
		eh.e_shstrndx = e32.e_shstrndx;
		eh.e_phentsize = e32.e_phentsize;
		eh.e_shentsize = e32.e_shentsize;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return 0;

	unsigned flags = P_STATIC; /* until a PT_INTERP shows the dynamic loader runs it */
	for (unsigned i = 0; i < eh.e_phnum && i < 4096; i++) {
		uint32_t type;
		if (read_at(fd, &type, sizeof type, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)))
			break;
		if (type == PT_INTERP) {
			flags &= ~(unsigned)P_STATIC;
			break;
		}
	}

	/* Go: its own sections, even in a cgo (dynamically linked) binary, whose net package
	 * still makes raw syscalls. */
	if (eh.e_shoff == 0 || eh.e_shstrndx == SHN_UNDEF || eh.e_shstrndx >= eh.e_shnum)
		return flags;
	uint64_t str_off, str_size;
	off_t sh = (off_t)(eh.e_shoff + (uint64_t)eh.e_shstrndx * eh.e_shentsize);
	if (is64) {
		Elf64_Shdr s;
		if (read_at(fd, &s, sizeof s, sh))
			return flags;
		str_off = s.sh_offset, str_size = s.sh_size;
	} else {
		Elf32_Shdr s;
		if (read_at(fd, &s, sizeof s, sh))
			return flags;
		str_off = s.sh_offset, str_size = s.sh_size;
	}
	if (str_size == 0 || str_size > (1u << 20))
		return flags;
	char *names = malloc(str_size + 1);
	if (!names)
		return flags;
	if (read_at(fd, names, str_size, (off_t)str_off) == 0) {
		names[str_size] = '\0';
		for (unsigned i = 0; i < eh.e_shnum && i < 65536; i++) {
			uint32_t name; /* sh_name is the first field of both Shdr layouts */
			if (read_at(fd, &name, sizeof name, (off_t)(eh.e_shoff + (uint64_t)i * eh.e_shentsize)))
				break;
			if (name < str_size && (strcmp(names + name, ".note.go.buildid") == 0 ||
			                        strcmp(names + name, ".go.buildinfo") == 0)) {
				flags |= P_GO;
				break;
			}
		}
	}
	free(names);
	return flags;
}

/* Flags for the file at path; a #! script is judged by its interpreter (the kernel ignores
 * setuid bits on scripts), up to the kernel's own nesting limit. */
static unsigned inspect(const char *path, char *judged, int depth)
{
	snprintf(judged, PATH_MAX, "%s", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char head[256];
	ssize_t n = pread(fd, head, sizeof head - 1, 0);
	if (n > 2 && head[0] == '#' && head[1] == '!') {
		close(fd);
		head[n] = '\0';
		char *s = head + 2;
		s += strspn(s, " \t");
		s[strcspn(s, " \t\r\n")] = '\0';
		if (*s != '/' || depth >= 4)
			return 0;
		char interp[PATH_MAX];
		snprintf(interp, sizeof interp, "%s", s);
		return inspect(interp, judged, depth + 1);
	}
	unsigned flags = inspect_elf(fd);
	struct stat st;
	if (fstat(fd, &st) == 0 &&
	    ((st.st_mode & S_ISUID) || ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP))))
		flags |= P_SETID;
	if (fgetxattr(fd, "security.capability", NULL, 0) > 0)
		flags |= P_CAPS;
	close(fd);
	return flags;
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
	if (resolve(name, path) != 0)
		return 0; /* execvp will say so */
	unsigned flags = inspect(path, judged, 0);
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
		fprintf(stderr, "socktune: %s: %s%s%s %s; %s\n", strict ? "error" : "warning", judged,
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

static int run(const struct cli *c, const struct st_policy *p, const char *argv0)
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

/* ---- check: this host's limits, and what each configured value becomes here ---- */

/* Raw system calls for the probe socket: when this command itself runs under a preloaded
 * libsocktune (a wrapper nested in a wrapped script), socket, bind, listen, setsockopt and
 * close are its hooks, and would tune the probe with the outer policy. */
static int probe_socket(void)
{
	int fd = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fd = (int)syscall(SYS_socket, AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return fd;
}

static void probe_close(int fd)
{
	if (fd >= 0)
		syscall(SYS_close, fd);
}

static int probe_set(int fd, int level, int opt, const void *val, socklen_t len)
{
	return (int)syscall(SYS_setsockopt, fd, level, opt, val, len);
}

static int probe_get(int fd, int level, int opt, void *val, socklen_t *len)
{
	return (int)syscall(SYS_getsockopt, fd, level, opt, val, len);
}

static int probe_set_int(int fd, int level, int opt, int v)
{
	return probe_set(fd, level, opt, &v, sizeof v);
}

static int probe_get_int(int fd, int level, int opt, long long *out)
{
	int v = 0;
	socklen_t len = sizeof v;
	if (probe_get(fd, level, opt, &v, &len) != 0)
		return -1;
	*out = v;
	return 0;
}

/* listen(want) on a loopback socket, and the backlog the kernel keeps (TCP_INFO's
 * tcpi_sacked on a listener is sk_max_ack_backlog, after the somaxconn cut). */
static int probe_backlog(long long want, long long *out)
{
	int fd = probe_socket();
	if (fd < 0)
		return -1;
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof ss);
	long long domain = AF_INET;
	probe_get_int(fd, SOL_SOCKET, SO_DOMAIN, &domain);
	if (domain == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof *a;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *a;
	}
	struct tcp_info ti;
	socklen_t tlen = sizeof ti;
	memset(&ti, 0, sizeof ti);
	int r = -1;
	if (syscall(SYS_bind, fd, &ss, len) == 0 &&
	    syscall(SYS_listen, fd, want > INT_MAX ? INT_MAX : (int)want) == 0 &&
	    probe_get(fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) == 0) {
		*out = ti.tcpi_sacked;
		r = 0;
	}
	probe_close(fd);
	return r;
}

static const struct {
	const char *name;
	int words; /* 0: one number, 3: three numbers, -1: a list of names */
} host_sysctls[] = {
	{"net.core.rmem_max", 0},
	{"net.core.wmem_max", 0},
	{"net.core.somaxconn", 0},
	{"net.ipv4.tcp_rmem", 3},
	{"net.ipv4.tcp_wmem", 3},
	{"net.ipv4.tcp_mem", 3},
	{"net.ipv4.tcp_max_syn_backlog", 0},
	{"net.ipv4.tcp_available_congestion_control", -1},
	{"net.ipv4.tcp_allowed_congestion_control", -1},
	{"net.ipv4.tcp_congestion_control", -1},
	{"net.ipv4.tcp_slow_start_after_idle", 0},
	{"net.ipv4.tcp_fastopen", 0},
};
#define N_SYSCTL (sizeof host_sysctls / sizeof host_sysctls[0])

struct host {
	char val[N_SYSCTL][512]; /* "" when unreadable */
	int cap_net_admin;       /* 1, 0, or -1 when unknown */
	struct rlimit nofile;
	long page;
};

static const char *host_get(const struct host *h, const char *name)
{
	for (size_t i = 0; i < N_SYSCTL; i++)
		if (strcmp(host_sysctls[i].name, name) == 0)
			return h->val[i];
	return "";
}

static long long host_num(const struct host *h, const char *name, int word)
{
	const char *s = host_get(h, name);
	for (int w = 0; w < word && *s; w++) {
		s += strcspn(s, " ");
		s += strspn(s, " ");
	}
	char *end;
	long long v = strtoll(s, &end, 10);
	return end == s ? -1 : v;
}

static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *s = list; *s;) {
		s += strspn(s, " ");
		size_t len = strcspn(s, " ");
		if (len == n && strncmp(s, word, n) == 0)
			return 1;
		s += len;
	}
	return 0;
}

static int cap_net_admin(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return -1;
	char line[256];
	int r = -1;
	for (int i = 0; i < 200 && fgets(line, sizeof line, f); i++) {
		unsigned long long caps;
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			r = (int)((caps >> 12) & 1); /* CAP_NET_ADMIN */
			break;
		}
	}
	fclose(f);
	return r;
}

static void read_host(struct host *h)
{
	for (size_t i = 0; i < N_SYSCTL; i++)
		if (st_sysctl_str(host_sysctls[i].name, h->val[i], sizeof h->val[i]) != 0)
			h->val[i][0] = '\0';
	h->cap_net_admin = cap_net_admin();
	if (getrlimit(RLIMIT_NOFILE, &h->nofile) != 0)
		h->nofile.rlim_cur = h->nofile.rlim_max = 0;
	h->page = sysconf(_SC_PAGESIZE);
}

enum verdict_status { V_OK, V_NOTE, V_UNCHECKED, V_CLAMPED, V_FALLBACK, V_IGNORED, V_FAILED };
static const char *const status_names[] = {"ok", "note", "unchecked", "clamped",
                                           "fallback", "ignored", "failed"};
#define V_IN_FULL(s) ((s) <= V_UNCHECKED)

struct verdict {
	int id;
	enum verdict_status status;
	const char *value;           /* as configured */
	int numeric;                 /* want/effective below are meaningful */
	long long want, effective;
	int measured;                /* effective was read back from a probe socket */
	int doubled;                 /* the kernel reports twice the request */
	char why[320];
	char fix[200];
};

struct memory {
	long long rcv, snd; /* per connection, bytes */
	int rcv_set, snd_set;
	long long nofile;   /* -1: unlimited */
	long long tcp_mem_pages, page;
};

/* SO_RCVBUF / SO_SNDBUF: request, read back, and explain any shortfall. */
static void check_buffer(struct verdict *v, const struct st_policy *p, const struct host *h,
                         int rcv)
{
	const char *limit = rcv ? "net.core.rmem_max" : "net.core.wmem_max";
	long long max = host_num(h, limit, 0);
	long long want = v->want;
	int force = rcv && st_on(p, ST_V_RCVBUF_FORCE);
	int forced = 0, fd = probe_socket();
	v->doubled = 1;
	if (fd >= 0) {
		if (force && probe_set_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, (int)want) == 0)
			forced = 1;
		if (!forced)
			probe_set_int(fd, SOL_SOCKET, rcv ? SO_RCVBUF : SO_SNDBUF, (int)want);
		v->measured = probe_get_int(fd, SOL_SOCKET, rcv ? SO_RCVBUF : SO_SNDBUF,
		                            &v->effective) == 0;
		probe_close(fd);
	}
	if (!v->measured) {
		/* The kernel's arithmetic: min(request, limit) doubled, unless forced. */
		long long w = (!force || h->cap_net_admin != 1) && max >= 0 && want > max ? max : want;
		v->effective = 2 * (w > INT_MAX / 2 ? INT_MAX / 2 : w);
		forced = force && h->cap_net_admin == 1;
	}
	const char *tmem = rcv ? "net.ipv4.tcp_rmem" : "net.ipv4.tcp_wmem";
	long long auto_max = host_num(h, tmem, 2);
	if (v->effective >= 2 * want || (want > INT_MAX / 2 && v->effective >= INT_MAX - 1)) {
		v->status = V_OK;
		int n = snprintf(v->why, sizeof v->why, "ok%s", forced ? " via SO_RCVBUFFORCE "
		                 "(CAP_NET_ADMIN held here; the program needs it too)" : "");
		if (auto_max > v->effective && n > 0 && (size_t)n < sizeof v->why)
			snprintf(v->why + n, sizeof v->why - (size_t)n,
			         "; autotuning is off for these sockets (it could grow to %s max %lld)",
			         tmem, auto_max);
		return;
	}
	v->status = force ? V_FALLBACK : V_CLAMPED;
	snprintf(v->why, sizeof v->why, "clamped by %s=%lld%s", limit, max,
	         force ? " (SO_RCVBUFFORCE needs CAP_NET_ADMIN, not held: SO_RCVBUF fallback)" : "");
	if (rcv)
		snprintf(v->fix, sizeof v->fix, "sysctl -w %s=%lld, or CAP_NET_ADMIN + --rcvbuf-force",
		         limit, want);
	else
		snprintf(v->fix, sizeof v->fix, "sysctl -w %s=%lld", limit, want);
}

/* A backlog floor or replacement: listen() with it, and compare. */
static void check_backlog(struct verdict *v, const struct host *h)
{
	long long somax = host_num(h, "net.core.somaxconn", 0);
	v->measured = probe_backlog(v->want, &v->effective) == 0;
	if (!v->measured)
		v->effective = somax >= 0 && v->want > somax ? somax : v->want;
	if (v->effective >= v->want) {
		v->status = V_OK;
		snprintf(v->why, sizeof v->why, "ok");
		return;
	}
	v->status = V_CLAMPED;
	snprintf(v->why, sizeof v->why, "clamped by net.core.somaxconn=%lld", somax);
	snprintf(v->fix, sizeof v->fix, "sysctl -w net.core.somaxconn=%lld", v->want);
}

/* Options a probe can set and read back as they are (a small table by option name, so
 * that it builds whatever variables the header has). */
static const struct {
	const char *option;
	int level, opt;
	const char *label;
} readback[] = {
	{"nodelay", IPPROTO_TCP, TCP_NODELAY, "TCP_NODELAY"},
	{"user-timeout", IPPROTO_TCP, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT"},
	{"notsent-lowat", IPPROTO_TCP, TCP_NOTSENT_LOWAT, "TCP_NOTSENT_LOWAT"},
	{"reuseport", SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT"},
	{"priority", SOL_SOCKET, SO_PRIORITY, "SO_PRIORITY"},
	{"mark", SOL_SOCKET, SO_MARK, "SO_MARK"},
	{"tos", IPPROTO_IP, IP_TOS, "IP_TOS"},
	{"defer-accept", IPPROTO_TCP, TCP_DEFER_ACCEPT, "TCP_DEFER_ACCEPT"},
};

/* SOCKTUNE_KEEPALIVE: SO_KEEPALIVE and each of IDLE:INTVL:CNT that is given, on a probe. */
static void check_keepalive(struct verdict *v, const struct st_policy *p)
{
	const struct {
		int level, opt, want;
		const char *label;
	} parts[] = {
		{SOL_SOCKET, SO_KEEPALIVE, (int)p->num[v->id], "SO_KEEPALIVE"},
		{IPPROTO_TCP, TCP_KEEPIDLE, p->ka_idle, "TCP_KEEPIDLE"},
		{IPPROTO_TCP, TCP_KEEPINTVL, p->ka_intvl, "TCP_KEEPINTVL"},
		{IPPROTO_TCP, TCP_KEEPCNT, p->ka_cnt, "TCP_KEEPCNT"},
	};
	int fd = probe_socket();
	if (fd < 0) {
		v->status = V_UNCHECKED;
		snprintf(v->why, sizeof v->why, "not verified (no probe socket: %s)", strerror(errno));
		return;
	}
	v->status = V_OK;
	snprintf(v->why, sizeof v->why, "ok");
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		long long got = -1;
		if (i > 0 && (parts[i].want == 0 || !p->num[v->id]))
			continue; /* that part left to the kernel's default */
		if (probe_set_int(fd, parts[i].level, parts[i].opt, parts[i].want) != 0 ||
		    probe_get_int(fd, parts[i].level, parts[i].opt, &got) != 0) {
			v->status = V_FAILED;
			snprintf(v->why, sizeof v->why, "setsockopt %s: %s", parts[i].label, strerror(errno));
			break;
		}
		if ((i == 0 ? got != 0 : got) != parts[i].want) {
			v->status = V_CLAMPED;
			snprintf(v->why, sizeof v->why, "%s: the kernel kept %lld", parts[i].label, got);
			break;
		}
	}
	probe_close(fd);
}

static void check_readback(struct verdict *v, const struct st_policy *p, int k)
{
	long long want = p->num[v->id], got = -1;
	int booleans = st_vars[v->id].type == ST_T_BOOL;
	int fd = probe_socket(), e = 0;
	v->numeric = 1;
	v->want = want;
	if (fd < 0) {
		v->status = V_UNCHECKED;
		snprintf(v->why, sizeof v->why, "not verified (no probe socket: %s)", strerror(errno));
		return;
	}
	if (probe_set_int(fd, readback[k].level, readback[k].opt, (int)want) != 0)
		e = errno;
	else if (probe_get_int(fd, readback[k].level, readback[k].opt, &got) != 0)
		e = errno;
	probe_close(fd);
	if (e) {
		v->status = V_FAILED;
		snprintf(v->why, sizeof v->why, "setsockopt %s: %s", readback[k].label, strerror(e));
		if (e == EPERM)
			snprintf(v->fix, sizeof v->fix, "grant the program CAP_NET_ADMIN");
		return;
	}
	v->measured = 1;
	v->effective = booleans ? got != 0 : got;
	v->status = v->effective == want ? V_OK : V_CLAMPED;
	snprintf(v->why, sizeof v->why, "%s", v->status == V_OK ? "ok" : "the kernel kept another value");
	/* The kernel keeps TCP_DEFER_ACCEPT as a count of SYN-ACK retransmissions and reports
	 * the time that count covers: rounded up, never less. */
	if (v->id == ST_V_DEFER_ACCEPT && got > want) {
		v->status = V_OK;
		snprintf(v->why, sizeof v->why, "ok (rounded up to %lld s: SYN-ACK retransmission steps)",
		         got);
	}
}

static void check_congestion(struct verdict *v, const struct host *h)
{
	const char *avail = host_get(h, "net.ipv4.tcp_available_congestion_control");
	const char *allowed = host_get(h, "net.ipv4.tcp_allowed_congestion_control");
	char got[32] = "";
	int fd = probe_socket(), e = 0;
	if (fd >= 0) {
		socklen_t len = sizeof got - 1;
		if (probe_set(fd, IPPROTO_TCP, TCP_CONGESTION, v->value, (socklen_t)strlen(v->value)))
			e = errno;
		else if (probe_get(fd, IPPROTO_TCP, TCP_CONGESTION, got, &len) == 0)
			v->measured = 1;
		probe_close(fd);
	}
	if (v->measured && strcmp(got, v->value) == 0) {
		v->status = V_OK;
		snprintf(v->why, sizeof v->why, "ok%s", has_word(allowed, v->value) ? "" :
		         " here (not in net.ipv4.tcp_allowed_congestion_control: a program without "
		         "CAP_NET_ADMIN gets EPERM)");
		return;
	}
	v->status = V_FAILED;
	if (!has_word(avail, v->value)) {
		snprintf(v->why, sizeof v->why, "not available (net.ipv4.tcp_available_congestion_control="
		         "%s)", avail);
		snprintf(v->fix, sizeof v->fix, "modprobe tcp_%s", v->value);
	} else {
		snprintf(v->why, sizeof v->why, "not allowed (net.ipv4.tcp_allowed_congestion_control=%s)%s%s",
		         allowed, e ? ": " : "", e ? strerror(e) : "");
		snprintf(v->fix, sizeof v->fix,
		         "sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\", or CAP_NET_ADMIN",
		         allowed, v->value);
	}
}

/* A path the library will append to (log file, and any later PATH variable). */
static void check_path(struct verdict *v)
{
	char path[PATH_MAX];
	if (st_expand_path(v->value, (long)getpid(), path, sizeof path) != 0) {
		v->status = V_FAILED;
		snprintf(v->why, sizeof v->why, "path too long");
		return;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	int ok = access(path, F_OK) == 0 ? access(path, W_OK) == 0 : access(dir, W_OK | X_OK) == 0;
	v->status = ok ? V_OK : V_FAILED;
	snprintf(v->why, sizeof v->why, "%s%s", ok ? "ok: writable by this user" :
	         "not writable by this user",
	         !ok && v->id == ST_V_LOG_FILE ? ": the library would log to stderr instead" : "");
}

static void check_one(struct verdict *v, const struct st_policy *p, const struct host *h)
{
	const char *opt = st_vars[v->id].option;
	enum st_type type = st_vars[v->id].type;
	v->status = V_OK;
	snprintf(v->why, sizeof v->why, "ok");
	if (type == ST_T_SIZE || type == ST_T_INT) {
		v->numeric = 1;
		v->want = v->effective = p->num[v->id];
	}

	if (v->id == ST_V_RCVBUF || v->id == ST_V_SNDBUF) {
		check_buffer(v, p, h, v->id == ST_V_RCVBUF);
	} else if (v->id == ST_V_BACKLOG) {
		check_backlog(v, h);
	} else if (v->id == ST_V_BACKLOG_MIN || v->id == ST_V_BACKLOG_MAX) {
		if (st_has(p, ST_V_BACKLOG)) {
			v->status = V_IGNORED;
			snprintf(v->why, sizeof v->why, "ignored: --backlog is set and replaces it");
		} else if (v->id == ST_V_BACKLOG_MIN) {
			check_backlog(v, h);
		} else {
			long long somax = host_num(h, "net.core.somaxconn", 0);
			if (somax >= 0 && somax < v->want)
				snprintf(v->why, sizeof v->why,
				         "ok (net.core.somaxconn=%lld is lower and cuts first)", somax);
		}
	} else if (v->id == ST_V_RCVBUF_FORCE) {
		if (!p->num[v->id]) {
			snprintf(v->why, sizeof v->why, "ok (off)");
		} else if (!st_has(p, ST_V_RCVBUF)) {
			v->status = V_NOTE;
			snprintf(v->why, sizeof v->why, "note: no effect without --rcvbuf");
		} else if (h->cap_net_admin != 1) {
			v->status = V_FALLBACK;
			snprintf(v->why, sizeof v->why,
			         "CAP_NET_ADMIN not held: SO_RCVBUFFORCE fails, SO_RCVBUF is used");
			snprintf(v->fix, sizeof v->fix, "grant the program CAP_NET_ADMIN");
		} else {
			snprintf(v->why, sizeof v->why, "ok: CAP_NET_ADMIN held here (the program needs it too)");
		}
	} else if (v->id == ST_V_QUICKACK && p->num[v->id]) {
		int fd = probe_socket();
		int ok = fd >= 0 && probe_set_int(fd, IPPROTO_TCP, TCP_QUICKACK, 1) == 0;
		probe_close(fd);
		v->status = ok ? V_OK : V_FAILED;
		snprintf(v->why, sizeof v->why, "%s: set on each accepted connection, re-armed after every "
		         "receive that returns data (one setsockopt per receive)", ok ? "ok" : "failed");
	} else if (type == ST_T_PATH) {
		check_path(v);
	} else if (v->id == ST_V_DISABLE && p->num[v->id]) {
		v->status = V_NOTE;
		snprintf(v->why, sizeof v->why, "note: the library will do nothing at all");
	} else if (strcmp(opt, "dry-run") == 0 && p->num[v->id]) {
		v->status = V_NOTE;
		snprintf(v->why, sizeof v->why, "note: the library will only log, changing nothing");
	} else if (v->id == ST_V_PORTS || v->id == ST_V_LOG || v->id == ST_V_DISABLE ||
	           v->id == ST_V_QUICKACK || strcmp(opt, "client-ports") == 0 ||
	           strcmp(opt, "client") == 0 || strcmp(opt, "precedence") == 0 ||
	           strcmp(opt, "dry-run") == 0) {
		snprintf(v->why, sizeof v->why, "ok (nothing the host decides)");
	} else if (strcmp(opt, "congestion") == 0) {
		check_congestion(v, h);
	} else if (strcmp(opt, "keepalive") == 0) {
		check_keepalive(v, p);
	} else if (strcmp(opt, "fastopen") == 0 && v->want > 0) {
		long long tfo = host_num(h, "net.ipv4.tcp_fastopen", 0);
		if (tfo >= 0 && !(tfo & 2)) {
			v->status = V_FAILED;
			snprintf(v->why, sizeof v->why,
			         "server fast open is off (net.ipv4.tcp_fastopen=%lld)", tfo);
			snprintf(v->fix, sizeof v->fix, "sysctl -w net.ipv4.tcp_fastopen=%lld", tfo | 3);
		} else {
			snprintf(v->why, sizeof v->why, "ok (net.ipv4.tcp_fastopen=%lld)", tfo);
		}
	} else {
		int k = -1;
		for (size_t i = 0; i < sizeof readback / sizeof readback[0]; i++)
			if (strcmp(readback[i].option, opt) == 0)
				k = (int)i;
		if (k >= 0) {
			check_readback(v, p, k);
		} else {
			/* an option this check does not know yet: the library still applies it */
			v->status = V_UNCHECKED;
			snprintf(v->why, sizeof v->why,
			         "valid; not checked here (the library logs what it applied)");
		}
	}
}

static int run_checks(const struct st_policy *p, const struct host *h, struct verdict *out)
{
	int n = 0;
	for (int i = 0; i < ST_V_COUNT; i++) {
		if (!st_has(p, (enum st_var_id)i))
			continue;
		struct verdict *v = &out[n++];
		memset(v, 0, sizeof *v);
		v->id = i;
		v->value = getenv(st_vars[i].env);
		if (!v->value)
			v->value = "";
		check_one(v, p, h);
	}
	return n;
}

static void memory_exposure(const struct host *h, const struct verdict *v, int n,
                            struct memory *m)
{
	memset(m, 0, sizeof *m);
	m->rcv = host_num(h, "net.ipv4.tcp_rmem", 2);
	m->snd = host_num(h, "net.ipv4.tcp_wmem", 2);
	for (int i = 0; i < n; i++) {
		if (v[i].id == ST_V_RCVBUF)
			m->rcv = v[i].effective, m->rcv_set = 1;
		if (v[i].id == ST_V_SNDBUF)
			m->snd = v[i].effective, m->snd_set = 1;
	}
	m->nofile = h->nofile.rlim_cur == RLIM_INFINITY ? -1 : (long long)h->nofile.rlim_cur;
	m->tcp_mem_pages = host_num(h, "net.ipv4.tcp_mem", 2);
	m->page = h->page;
}

static void json_sysctl(size_t i, const char *val)
{
	if (!*val) {
		fputs("null", stdout);
		return;
	}
	if (host_sysctls[i].words == 0) {
		char *end;
		long long num = strtoll(val, &end, 10);
		if (*end == '\0' && end != val)
			printf("%lld", num);
		else
			st_json_str(stdout, val);
		return;
	}
	/* lists: numbers or names, each word an element */
	putchar('[');
	const char *s = val;
	for (int k = 0; *s && k < 64; k++) {
		s += strspn(s, " ");
		size_t len = strcspn(s, " ");
		if (!len)
			break;
		char word[128];
		snprintf(word, sizeof word, "%.*s", (int)len, s);
		if (k)
			putchar(',');
		if (host_sysctls[i].words > 0)
			fputs(word, stdout);
		else
			st_json_str(stdout, word);
		s += len;
	}
	putchar(']');
}

static void print_json(const struct host *h, const struct verdict *v, int n,
                       const struct memory *m, int not_full)
{
	printf("{\n  \"version\": ");
	st_json_str(stdout, ST_VERSION);
	printf(",\n  \"host\": {\n");
	for (size_t i = 0; i < N_SYSCTL; i++) {
		printf("    ");
		st_json_str(stdout, host_sysctls[i].name);
		printf(": ");
		json_sysctl(i, h->val[i]);
		printf(",\n");
	}
	printf("    \"cap_net_admin\": %s,\n", h->cap_net_admin < 0 ? "null" :
	       h->cap_net_admin ? "true" : "false");
	printf("    \"rlimit_nofile\": {\"soft\": ");
	if (h->nofile.rlim_cur == RLIM_INFINITY)
		printf("null");
	else
		printf("%llu", (unsigned long long)h->nofile.rlim_cur);
	printf(", \"hard\": ");
	if (h->nofile.rlim_max == RLIM_INFINITY)
		printf("null");
	else
		printf("%llu", (unsigned long long)h->nofile.rlim_max);
	printf("},\n    \"page_size\": %ld\n  },\n  \"options\": [", h->page);
	for (int i = 0; i < n; i++) {
		printf("%s\n    {\"option\": ", i ? "," : "");
		st_json_str(stdout, st_vars[v[i].id].option);
		printf(", \"variable\": ");
		st_json_str(stdout, st_vars[v[i].id].env);
		printf(", \"value\": ");
		st_json_str(stdout, v[i].value);
		printf(", \"status\": \"%s\", \"in_full\": %s", status_names[v[i].status],
		       V_IN_FULL(v[i].status) ? "true" : "false");
		if (v[i].numeric)
			printf(", \"want\": %lld, \"effective\": %lld, \"measured\": %s, "
			       "\"kernel_reports_double\": %s",
			       v[i].want, v[i].effective, v[i].measured ? "true" : "false",
			       v[i].doubled ? "true" : "false");
		printf(", \"reason\": ");
		st_json_str(stdout, v[i].why);
		printf(", \"fix\": ");
		if (v[i].fix[0])
			st_json_str(stdout, v[i].fix);
		else
			printf("null");
		printf("}");
	}
	printf("%s],\n  \"memory\": {\"rcvbuf_per_connection\": %lld, \"rcvbuf_configured\": %s, "
	       "\"sndbuf_per_connection\": %lld, \"sndbuf_configured\": %s, ",
	       n ? "\n  " : "", m->rcv, m->rcv_set ? "true" : "false", m->snd,
	       m->snd_set ? "true" : "false");
	if (m->nofile < 0)
		printf("\"rlimit_nofile\": null, \"worst_case_bytes\": null, ");
	else
		printf("\"rlimit_nofile\": %lld, \"worst_case_bytes\": %lld, ", m->nofile,
		       (m->rcv + m->snd) * m->nofile);
	printf("\"tcp_mem_max_pages\": %lld, \"tcp_mem_max_bytes\": %lld},\n", m->tcp_mem_pages,
	       m->tcp_mem_pages * m->page);
	printf("  \"configured\": %d,\n  \"not_in_full\": %d\n}\n", n, not_full);
}

static void print_text(const struct host *h, const struct verdict *v, int n,
                       const struct memory *m, int not_full)
{
	printf("host (this process's network namespace, read from /proc/sys)\n");
	for (size_t i = 0; i < N_SYSCTL; i++) {
		printf("  %s = %s", host_sysctls[i].name, h->val[i][0] ? h->val[i] : "unavailable");
		if (strcmp(host_sysctls[i].name, "net.ipv4.tcp_mem") == 0)
			printf("   # pages of %ld bytes: min pressure max", h->page);
		else if (host_sysctls[i].words == 3)
			printf("   # bytes: min default max");
		printf("\n");
	}
	printf("  CAP_NET_ADMIN = %s\n", h->cap_net_admin < 0 ? "unknown" :
	       h->cap_net_admin ? "yes" : "no");
	if (h->nofile.rlim_cur == RLIM_INFINITY)
		printf("  RLIMIT_NOFILE = unlimited");
	else
		printf("  RLIMIT_NOFILE = %llu", (unsigned long long)h->nofile.rlim_cur);
	printf("   # soft limit: descriptors, so connections, per process\n");

	printf("\nconfigured (environment and options; values after -> are read back from a "
	       "probe socket)\n");
	if (n == 0)
		printf("  nothing: the library would change nothing (give options or SOCKTUNE_* "
		       "variables)\n");
	for (int i = 0; i < n; i++) {
		const struct verdict *x = &v[i];
		if (x->numeric)
			printf("  %-13s %lld", st_vars[x->id].option, x->want);
		else
			printf("  %-13s %s", st_vars[x->id].option, x->value);
		if (x->numeric && (x->measured || x->status == V_CLAMPED || x->doubled))
			printf(" -> %lld%s%s", x->effective, x->doubled ? " (kernel reports 2x)" : "",
			       x->measured ? "" : " (predicted)");
		printf("  %s%s%s\n", x->why, x->fix[0] ? ": " : "", x->fix);
	}

	printf("\nmemory (per connection at full buffers, times RLIMIT_NOFILE, against "
	       "net.ipv4.tcp_mem)\n");
	long long per = m->rcv + m->snd;
	printf("  per connection = %lld bytes   # receive %lld (%s) + send %lld (%s)\n", per, m->rcv,
	       m->rcv_set ? "rcvbuf" : "autotuning max, net.ipv4.tcp_rmem", m->snd,
	       m->snd_set ? "sndbuf" : "autotuning max, net.ipv4.tcp_wmem");
	if (m->nofile >= 0)
		printf("  worst case = %lld bytes   # x %lld descriptors (RLIMIT_NOFILE)\n",
		       per * m->nofile, m->nofile);
	long long limit = m->tcp_mem_pages * m->page;
	if (m->tcp_mem_pages > 0 && per > 0) {
		printf("  net.ipv4.tcp_mem max = %lld bytes   # %lld pages x %lld: for all TCP sockets "
		       "of the host\n",
		       limit, m->tcp_mem_pages, m->page);
		printf("  connections at full buffers before tcp_mem's max = %lld%s\n", limit / per,
		       m->nofile >= 0 && per * m->nofile > limit
		           ? "   # beyond it the kernel drops and throttles TCP memory host-wide"
		           : "");
	}
	printf("\n");
	if (n == 0)
		printf("result: nothing configured\n");
	else if (not_full)
		printf("result: %d of %d configured values would not take effect in full\n", not_full, n);
	else
		printf("result: all %d configured values take effect in full\n", n);
}

static int check(const struct cli *c, const struct st_policy *p)
{
	struct host h;
	struct verdict v[ST_V_COUNT];
	struct memory m;
	read_host(&h);
	int n = run_checks(p, &h, v);
	memory_exposure(&h, v, n, &m);
	int not_full = 0;
	for (int i = 0; i < n; i++)
		not_full += !V_IN_FULL(v[i].status);
	if (c->json)
		print_json(&h, v, n, &m, not_full);
	else
		print_text(&h, v, n, &m, not_full);
	if (fflush(stdout) != 0)
		return 1;
	return c->strict && not_full ? 1 : 0;
}

/* socktune stats [--json] [--watch SECONDS [--count N]] FILE: the SOCKTUNE_STATS file of a
 * running or a dead server, read by statsview.c. */
struct stats_args {
	int json;
	long long every, times; /* --watch, --count; 0: not given */
	const char *file;
};

static enum cli_status stats_parse(int argc, char **argv, struct stats_args *s, FILE *msg)
{
	char err[160];
	memset(s, 0, sizeof *s);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--json") == 0) {
			s->json = 1;
		} else if (strcmp(a, "--watch") == 0 || strcmp(a, "--count") == 0) {
			long long *dst = a[2] == 'w' ? &s->every : &s->times;
			if (i + 1 >= argc)
				return usage_error(msg, "stats: %s: missing value", a);
			if (st_parse_int(argv[++i], 1, 86400, dst, err, sizeof err) != 0)
				return usage_error(msg, "stats: %s %s: %s", a, argv[i], err);
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			return CLI_HELP;
		} else if (a[0] == '-' && strcmp(a, "-") != 0) {
			return usage_error(msg, "stats: unknown option %s", a);
		} else if (s->file) {
			return usage_error(msg, "stats: one FILE only (%s, then %s)", s->file, a);
		} else {
			s->file = a;
		}
	}
	if (!s->file)
		return usage_error(msg, "stats: which file? (the SOCKTUNE_STATS path, %%p replaced by "
		                   "the pid)");
	if (s->times && !s->every)
		return usage_error(msg, "stats: --count goes with --watch");
	return CLI_GO;
}

static int stats_main(const struct stats_args *s)
{
	for (long long n = 1;; n++) {
		if (s->every && !s->json && isatty(STDOUT_FILENO))
			fputs("\033[H\033[2J", stdout);
		int r = st_stats_print(s->file, s->json);
		if (r != 0 || !s->every || (s->times && n >= s->times))
			return r;
		sleep((unsigned)s->every);
	}
}

/* The exit status for what a parser said when it was not CLI_GO. */
static int exit_status(enum cli_status r)
{
	switch (r) {
	case CLI_HELP:
		usage(stdout);
		return 0;
	case CLI_VERSION:
		printf("socktune %s\n", ST_VERSION);
		return 0;
	case CLI_GO:
	case CLI_BAD:
		break;
	}
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	enum cli_status r;
	if (argc > 1 && strcmp(argv[1], "stats") == 0) {
		struct stats_args s;
		r = stats_parse(argc - 1, argv + 1, &s, stderr);
		return r == CLI_GO ? stats_main(&s) : exit_status(r);
	}
	struct cli c;
	struct st_policy p;
	memset(&c, 0, sizeof c);
	r = parse_args(argc, argv, &c, stderr);
	if (r == CLI_GO)
		r = build_policy(&c, &p, stderr);
	if (r != CLI_GO)
		return exit_status(r);
	return c.check ? check(&c, &p) : run(&c, &p, argc > 0 ? argv[0] : "socktune");
}
