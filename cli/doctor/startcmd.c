/* How a running process would be started again, for doctor's next-start fixes.  The kernel
 * keeps a process's argv (/proc/PID/cmdline) as memory the program may write over, and
 * servers that set a title do: nginx and postgres leave one word with spaces, redis its
 * title and then NULs (91 empty words).  So the first word is checked against the program
 * the process runs (/proc/PID/exe, by device and inode), which is never printed in its place:
 * a symlinked multi-call binary named by its target runs another program.  A VM its launcher
 * exec'd in the same process (Erlang's erl -> erlexec -> beam.smp) is started by that
 * launcher again.  The command runs from the process's working directory, where its relative
 * paths lead.  inspect_program says whether LD_PRELOAD reaches the program at all. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "socktune.h"
#include "doctor/doctor.h"
#include "host/inspect.h"

#define MAX_TEXT 65536 /* bytes of a command line or an environment read */
#define MAX_WORDS 4096

static char raw[MAX_TEXT + 1], env[MAX_TEXT + 1]; /* (large: not on the stack) */

/* /proc/PID/what into buf: its length (MAX_TEXT when it is longer), -1 with errno */
static ssize_t read_proc(int pid, const char *what, char *buf)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", pid, what);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	for (ssize_t n; len < MAX_TEXT && (n = read(fd, buf + len, MAX_TEXT - len)) != 0;) {
		if (n < 0) {
			int err = errno;
			close(fd);
			errno = err;
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

static const char *env_of(const char *e, size_t len, const char *name)
{
	size_t n = strlen(name);
	for (size_t k = 0; k < len; k += strlen(e + k) + 1)
		if (strncmp(e + k, name, n) == 0 && e[k + n] == '=')
			return e + k + n + 1;
	return NULL;
}

static int same_file(const char *path, const struct stat *exe)
{
	struct stat st;
	return stat(path, &st) == 0 && st.st_dev == exe->st_dev && st.st_ino == exe->st_ino;
}

static int printable(const char *s)
{
	for (const unsigned char *u = (const unsigned char *)s; *u;) {
		int n = doc_printable_len(u);
		if (!n)
			return 0;
		u += n;
	}
	return 1;
}

/* words[from..to) appended to out as shell words, each after a space */
static void add_words(char *out, size_t n, char **words, int from, int to)
{
	for (int k = from; k < to; k++) {
		doc_say(out, n, " ");
		doc_quote(out, n, words[k]);
	}
}

/* path, links followed, is an executable file of the installation at root (erl is
 * ROOT/bin/erl: a launcher found elsewhere would start another VM, or anything) */
static int in_root(const char *path, const char *root)
{
	char real[PATH_MAX], top[PATH_MAX];
	if (!root || !realpath(path, real) || !realpath(root, top) || access(real, X_OK) != 0)
		return 0;
	size_t n = strlen(top);
	return strncmp(real, top, n) == 0 && real[n] == '/';
}

/* Erlang: erl (a shell script) runs erlexec, which execs beam in the same process with its
 * words around the operator's:
 *   beam EMU... -- -root R -bindir B -progname P -- -home H -- ARGS...
 * EMU are the operator's +flags, written -flag.  Rebuilt: P +EMU... ARGS..., P the launcher
 * the operator ran: $_ when it names P (bash puts the path of the program it runs there;
 * a launcher exec'd from sh keeps an older one), else P along this PATH. */
static int erlang(char **w, int n, size_t envlen, struct doc_start *s)
{
	int sep[3], ns = 0;
	for (int k = 1; k < n && ns < 3; k++)
		if (strcmp(w[k], "--") == 0)
			sep[ns++] = k;
	const char *prog = NULL, *root = NULL;
	for (int k = ns == 3 ? sep[0] + 1 : n; k + 1 < sep[1]; k++) {
		if (strcmp(w[k], "-progname") == 0)
			prog = w[k + 1];
		if (strcmp(w[k], "-root") == 0)
			root = w[k + 1];
	}
	if (!prog || !*prog || strchr(prog, '/')) {
		snprintf(s->why, sizeof s->why, "it runs Erlang's beam, whose command line does not "
		         "show the launcher that started it");
		return 0;
	}
	const char *under = env_of(env, envlen, "_"), *base = under ? strrchr(under, '/') : NULL;
	char found[PATH_MAX];
	const char *path = getenv("PATH");
	if (base && strcmp(base + 1, prog) == 0 && printable(under) && in_root(under, root))
		doc_quote(s->argv, sizeof s->argv, under);
	else if (path_lookup(prog, path ? path : "/bin:/usr/bin", found) == 0 && in_root(found, root))
		doc_quote(s->argv, sizeof s->argv, prog);
	else {
		snprintf(s->why, sizeof s->why, "it runs Erlang's beam, started by %.40s, which is not "
		         "on this PATH as the launcher of its installation", prog);
		return 0;
	}
	for (int k = 1; k < sep[0]; k++) {
		char flag[1024];
		snprintf(flag, sizeof flag, "%s", w[k]);
		if (flag[0] == '-' && flag[1])
			flag[0] = '+';
		doc_say(s->argv, sizeof s->argv, " ");
		doc_quote(s->argv, sizeof s->argv, flag);
	}
	add_words(s->argv, sizeof s->argv, w, sep[2] + 1, n);
	return 1;
}

/* The first word names the program the process runs: as a path (from its working
 * directory), along this PATH (kept as it is: the operator's shell finds it the same way), or
 * along the process's own PATH (then written as the path found) */
static int program_named(int pid, char **w, size_t envlen, const char *cwd,
                         const struct stat *exe, struct doc_start *s)
{
	const char *a0 = w[0];
	char found[PATH_MAX];
	const char *path = getenv("PATH"), *theirs = env_of(env, envlen, "PATH");
	if (!*a0)
		return 0;
	if (strchr(a0, '/')) {
		int len = snprintf(found, sizeof found, "%s%s%s", a0[0] == '/' ? "" : cwd,
		                   a0[0] == '/' ? "" : "/", a0);
		if (len < 0 || (size_t)len >= sizeof found)
			return 0;
		if (!same_file(found, exe)) {
			/* the program replaced on disk (an upgrade): "/path (deleted)" names it */
			char link[PATH_MAX + 16], real[PATH_MAX], proc[64];
			snprintf(proc, sizeof proc, "/proc/%d/exe", pid);
			ssize_t e = readlink(proc, link, sizeof link - 1);
			link[e > 0 ? e : 0] = '\0';
			char *del = strstr(link, " (deleted)");
			if (!del || del[10] || !realpath(found, real))
				return 0;
			*del = '\0';
			if (strcmp(real, link) != 0)
				return 0;
		}
		doc_quote(s->argv, sizeof s->argv, a0);
	} else if (path_lookup(a0, path ? path : "/bin:/usr/bin", found) == 0 &&
	           same_file(found, exe)) {
		doc_quote(s->argv, sizeof s->argv, a0);
	} else if (theirs && path_lookup(a0, theirs, found) == 0 && found[0] == '/' &&
	           same_file(found, exe)) {
		doc_quote(s->argv, sizeof s->argv, found);
	} else {
		return 0;
	}
	return 1;
}

/* Its SOCKTUNE_* settings, for the wrapper to keep (its flags take precedence over them):
 * the variables the policy reads, by name, each NAME=value with the value one shell word (a
 * name of anyone's making would be the command's first word) */
static void settings_of(size_t envlen, struct doc_start *s)
{
	for (int i = 0; i < ST_V_COUNT; i++) {
		const char *v = env_of(env, envlen, st_vars[i].env);
		if (!v || !printable(v))
			continue;
		size_t before = strlen(s->env);
		doc_say(s->env, sizeof s->env, "%s=", st_vars[i].env);
		doc_quote(s->env, sizeof s->env, v);
		doc_say(s->env, sizeof s->env, " ");
		if (strlen(s->env) + 1 >= sizeof s->env) { /* (cut: left out whole) */
			s->env[before] = '\0';
			break;
		}
	}
}

void doc_start_of(int pid, struct doc_start *s)
{
	memset(s, 0, sizeof *s);
	char proc[64], cwd[PATH_MAX + 16];
	struct stat exe, root, ours, self;
	snprintf(proc, sizeof proc, "/proc/%d", pid);
	s->uid = stat(proc, &self) == 0 ? (long)self.st_uid : -1;
	ssize_t len = read_proc(pid, "cmdline", raw);
	if (len <= 0 || len >= MAX_TEXT) {
		snprintf(s->why, sizeof s->why, len < 0 ? "its command line is not readable here"
		         : len ? "its command line is too long to show (64 KiB or more)"
		               : "it shows no command line (a kernel thread, or exiting)");
		return;
	}
	snprintf(proc, sizeof proc, "/proc/%d/exe", pid);
	if (stat(proc, &exe) != 0) {
		snprintf(s->why, sizeof s->why, "its program is not known here (%s: %s; the same "
		         "uid, or root)", proc, strerror(errno));
		return;
	}
	snprintf(proc, sizeof proc, "/proc/%d/root", pid);
	if (stat(proc, &root) == 0 && stat("/", &ours) == 0 &&
	    (root.st_dev != ours.st_dev || root.st_ino != ours.st_ino)) {
		snprintf(s->why, sizeof s->why, "it runs under another root directory (a container, "
		         "a chroot): its next start is that of the container");
		return;
	}
	snprintf(proc, sizeof proc, "/proc/%d/cwd", pid);
	ssize_t c = readlink(proc, cwd, sizeof cwd - 1);
	if (c <= 0 || c >= PATH_MAX) {
		snprintf(s->why, sizeof s->why, "its working directory is not known here (%s: %s)",
		         proc, c < 0 ? strerror(errno) : "too long");
		return;
	}
	cwd[c] = '\0';
	char *del = strstr(cwd, " (deleted)");
	if (del && !del[10]) {
		*del = '\0';
		snprintf(s->why, sizeof s->why, "its working directory (%.200s) was removed", cwd);
		return;
	}
	ssize_t envlen = read_proc(pid, "environ", env); /* (for $_ and PATH: may be missing) */
	if (envlen < 0)
		envlen = 0;
	static char *w[MAX_WORDS];
	int n = 0, empty = 0;
	size_t k = 0;
	for (; k < (size_t)len && n < MAX_WORDS; k += strlen(raw + k) + 1) {
		w[n++] = raw + k;
		empty = raw[k] ? 0 : empty + 1;
	}
	if (k < (size_t)len) {
		snprintf(s->why, sizeof s->why, "its command line has more than %d words", MAX_WORDS);
		return;
	}
	for (int j = 0; j < n; j++)
		if (!printable(w[j])) {
			snprintf(s->why, sizeof s->why, "its command line holds control characters (a "
			         "newline, an escape) or bytes that are not UTF-8");
			return;
		}
	const char *exe_name = w[0]; /* (for the message) */
	char link[PATH_MAX + 16];
	snprintf(proc, sizeof proc, "/proc/%d/exe", pid);
	ssize_t e = readlink(proc, link, sizeof link - 1);
	link[e > 0 ? e : 0] = '\0';
	const char *base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	int progname = 0;
	for (int j = 1; j < n; j++)
		progname |= strcmp(w[j], "-progname") == 0;
	if (strncmp(base, "beam", 4) == 0 && progname) {
		if (!erlang(w, n, (size_t)envlen, s)) {
			s->argv[0] = '\0';
			return;
		}
	} else if (program_named(pid, w, (size_t)envlen, cwd, &exe, s)) {
		add_words(s->argv, sizeof s->argv, w, 1, n);
	} else {
		s->argv[0] = '\0';
		snprintf(s->why, sizeof s->why, "it rewrote its command line (it shows '%.100s'", exe_name);
		if (empty)
			doc_say(s->why, sizeof s->why, " and %d empty words", empty);
		doc_say(s->why, sizeof s->why, "), which names no program it runs");
		return;
	}
	if (!printable(cwd)) {
		snprintf(s->why, sizeof s->why, "its working directory's name holds control "
		         "characters or bytes that are not UTF-8");
		return;
	}
	doc_quote(s->dir, sizeof s->dir, cwd);
	if (strlen(s->argv) + 1 >= sizeof s->argv || strlen(s->dir) + 1 >= sizeof s->dir) {
		snprintf(s->why, sizeof s->why, "its command line is too long to show");
		return;
	}
	settings_of((size_t)envlen, s);
	char judged[PATH_MAX];
	s->reach = inspect_program(proc, judged, 0);
	s->known = 1;
}
