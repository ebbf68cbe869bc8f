/* A process's cgroup and namespaces (cli/host/pidinfo.c): from /proc/PID/cgroup texts made up
 * here, the v2 path (only its "0::" line, a colon in a name kept, a line longer than any the
 * kernel writes passed over whole, so its tail is never taken for a line of its own) and the
 * one that names a service (v2's, else systemd's v1 hierarchy's, else the first); from this
 * process and a child in a UTS namespace of its own (as root), whether a namespace is ours. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/pidinfo.c"
#include "unit.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* cgroup_line over text, as pid_cgroup (service 0) or pid_cgroup_service (1) reads it */
static int line_of(const char *text, int service, char *out, size_t n)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	if (!f)
		return -9;
	int r = cgroup_line(f, service, out, n);
	fclose(f);
	return r;
}

/* "5:cpu:/xxx…" of len bytes, then what follows on the same line */
static char *long_line(size_t len, const char *then)
{
	char *s = malloc(len + strlen(then) + 1);
	if (!s)
		exit(2);
	memset(s, 'x', len);
	memcpy(s, "5:cpu:/", 7);
	strcpy(s + len, then);
	return s;
}

int main(void)
{
	static const struct {
		const char *text, *v2, *service;
	} cases[] = {
		{"0::/system.slice/nginx.service\n", "/system.slice/nginx.service",
		 "/system.slice/nginx.service"},
		/* a hybrid host: services in systemd's v1 hierarchy, the v2 tree at its root */
		{"9:pids:/\n4:memory:/x\n1:name=systemd:/system.slice/nginx.service\n0::/\n", "/",
		 "/system.slice/nginx.service"},
		{"1:name=systemd:/system.slice/a.service\n0::/system.slice/b.service\n",
		 "/system.slice/b.service", "/system.slice/b.service"},
		/* v1 alone, no systemd: the first hierarchy names it (cgroupfs docker) */
		{"4:memory:/docker/" ID64 "\n3:cpu:/other\n", NULL, "/docker/" ID64},
		{"0::/a:b/c::d\n", "/a:b/c::d", "/a:b/c::d"},
		{"0::/no-newline", "/no-newline", "/no-newline"},
		{"0::\n", NULL, ""},                   /* (no path: no cgroup) */
		{"\n", NULL, ""},
		{"garbage\n0:/x\n", NULL, ""},         /* (no second colon: not a line) */
		{"0::/.." "/../other.slice\n", "/../../other.slice", "/../../other.slice"},
	};
	char out[PATH_MAX];
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		int r = line_of(cases[k].text, 0, out, sizeof out);
		if (cases[k].v2 ? r != 0 || strcmp(out, cases[k].v2) != 0 : r != -2 || out[0])
			CASE_FAIL("v2 of '%s': %d '%s', want '%s'", cases[k].text, r, out,
			          cases[k].v2 ? cases[k].v2 : "(none)");
		line_of(cases[k].text, 1, out, sizeof out);
		if (strcmp(out, cases[k].service) != 0)
			CASE_FAIL("service of '%s': '%s', want '%s'", cases[k].text, out,
			          cases[k].service);
	}
	/* a path longer than out holds is none (never cut short) */
	char small[8] = "junk";
	int r = line_of("0::/abcdefgh\n", 0, small, sizeof small);
	if (r != -2 || small[0])
		CASE_FAIL("a path longer than out: %d '%s'", r, small);
	r = line_of("0::/abcdef\n", 0, small, sizeof small);
	if (r != 0 || strcmp(small, "/abcdef") != 0)
		CASE_FAIL("a path that just fits: %d '%s'", r, small);
	/* a line longer than the reader's buffer ends in "0::/fake": wherever the buffer would
	 * cut it (a reader of 4096 bytes, this one's), the tail is not a line */
	size_t cuts[] = {4095, PATH_MAX + 255, PATH_MAX + 254, 3 * PATH_MAX};
	for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
		char *text = long_line(cuts[k], "0::/fake\n0::/real\n");
		r = line_of(text, 0, out, sizeof out);
		if (r != 0 || strcmp(out, "/real") != 0)
			CASE_FAIL("a %zu-byte line before the v2 one: %d '%s'", cuts[k], r, out);
		line_of(text, 1, out, sizeof out);
		if (strcmp(out, "/real") != 0)
			CASE_FAIL("service after a %zu-byte line: '%s'", cuts[k], out);
		free(text);
	}
	/* the longest path the kernel writes (PATH_MAX - 1 bytes) is read whole */
	char *text = malloc(PATH_MAX + 8);
	if (!text)
		return 2;
	memcpy(text, "0::/", 4);
	memset(text + 4, 'p', PATH_MAX - 2);
	strcpy(text + 3 + PATH_MAX - 1, "\n");
	r = line_of(text, 0, out, sizeof out);
	if (r != 0 || strlen(out) != PATH_MAX - 1)
		CASE_FAIL("a path of PATH_MAX - 1 bytes: %d, %zu bytes", r, strlen(out));
	free(text);
	end_group("pidinfo.cgroup_line");

	/* this process's file, and one of no process */
	char path[64];
	if (strcmp(pid_cgroup_file(0, path, sizeof path), "/proc/self/cgroup") != 0 ||
	    strcmp(pid_cgroup_file(42, path, sizeof path), "/proc/42/cgroup") != 0)
		CASE_FAIL("file names: %s", path);
	char self[PATH_MAX], mine[PATH_MAX];
	int rs = pid_cgroup(0, self, sizeof self), rm = pid_cgroup(getpid(), mine, sizeof mine);
	if (rs != rm || (rs == 0 && (self[0] != '/' || strcmp(self, mine) != 0)))
		CASE_FAIL("self %d '%s', by pid %d '%s'", rs, self, rm, mine);
	errno = 0;
	r = pid_cgroup(INT_MAX, out, sizeof out); /* (above pid_max: never a process) */
	if (r != -1 || errno != ENOENT || out[0])
		CASE_FAIL("no such process: %d (errno %d) '%s'", r, errno, out);
	pid_cgroup_service(INT_MAX, out, sizeof out);
	if (out[0])
		CASE_FAIL("no such process's service cgroup: '%s'", out);
	end_group("pidinfo.pid_cgroup");

	if (pid_same_ns(getpid(), "net") != 1 || pid_same_ns(getpid(), "uts") != 1)
		CASE_FAIL("own namespaces: net %d uts %d", pid_same_ns(getpid(), "net"),
		          pid_same_ns(getpid(), "uts"));
	errno = 0;
	r = pid_same_ns(INT_MAX, "net");
	if (r != -1 || errno != ENOENT)
		CASE_FAIL("no such process: %d (errno %d)", r, errno);
	/* a child in a UTS namespace of its own (CAP_SYS_ADMIN): its uts another, its net ours */
	int ready[2], hold[2];
	if (pipe(ready) != 0 || pipe(hold) != 0)
		return 2;
	pid_t child = fork();
	if (child == 0) {
		close(ready[0]);
		close(hold[1]);
		char c = unshare(CLONE_NEWUTS) == 0 ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		ssize_t got = read(hold[0], &c, 1); /* (until the parent is done, or gone) */
		_exit(got < 0);
	}
	close(ready[1]);
	close(hold[0]);
	char c = 0;
	if (child < 0 || read(ready[0], &c, 1) != 1) {
		CASE_FAIL("child: fork or pipe");
	} else if (c == 'y') {
		int uts = pid_same_ns(child, "uts"), net = pid_same_ns(child, "net");
		if (uts != 0 || net != 1)
			CASE_FAIL("child in its own UTS namespace: uts %d (want 0), net %d (want 1)",
			          uts, net);
	} else {
		printf("  (no UTS namespace of its own here: no CAP_SYS_ADMIN)\n");
	}
	close(hold[1]);
	if (child > 0)
		waitpid(child, NULL, 0);
	end_group("pidinfo.pid_same_ns");
	return failures != 0;
}
