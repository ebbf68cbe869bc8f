/* execprobe: a server-like program that listens on 127.0.0.1 and then execs workers, the
 * way a master does, through one exec variant at a time.  It knows nothing of socktune.
 *
 *   execprobe run MODE VARIANT PROG [COUNT]
 *     MODE strip: the worker's environment lacks LD_PRELOAD; keep: it is ours.
 *     VARIANT: execve execveat fexecve execv execvp execvpe execl execlp execle vfork
 *              posix_spawn posix_spawnp (the p forms look up PROG's file name in PATH,
 *              set to PROG's directory).  COUNT workers (default 1), each in its own
 *              fork() child (posix_spawn: the call itself), one after the other.
 *     With EXECPROBE_EUID=N, it sets its effective uid to N after listening (as squid
 *     does); with EXECPROBE_INHERIT=1 the workers inherit the listener (no close-on-exec).  Then listens once more (a line the library writes after the workers).
 *     Output: "RUN variant=V ok=N count=C pid=P" (ok: workers that exited 0).
 *   execprobe fail
 *     Every variant on a program that does not exist, and execve with unreadable
 *     arguments, in this process, and one posix_spawn that succeeds (errno set before).
 *     Output: one "FAIL variant=V ret=R errno=E" line each. */
#include <fcntl.h>
#include <libgen.h>
#include <spawn.h>
#include <sys/wait.h>

#include "common.h"

extern char **environ;

#if !defined(__GLIBC__) /* musl 1.2.3 has no execveat(): the system call (t_exec runs on glibc) */
#include <sys/syscall.h>
static int execveat(int dfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	return (int)syscall(SYS_execveat, dfd, path, argv, envp, flags);
}
#endif

static char *stripped[256];

static void strip_env(void)
{
	size_t n = 0;
	for (char **e = environ; *e && n + 1 < sizeof stripped / sizeof stripped[0]; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			stripped[n++] = *e;
	stripped[n] = NULL;
}

static int listen_once(int inherit)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr("127.0.0.1", "0", &ss);
	int fd = socket(AF_INET, SOCK_STREAM | (inherit ? 0 : SOCK_CLOEXEC), 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 16) != 0)
		die("listener: %s", strerror(errno));
	return fd;
}

/* Run prog through variant with envp (environ for the forms that take none); returns only
 * when the exec failed: -1 with errno, or posix_spawn's error number. */
static int do_exec(const char *variant, const char *prog, const char *file, char **envp,
                   pid_t *spawned)
{
	char *argv[] = {(char *)file, NULL};
	if (!strcmp(variant, "execve"))
		return execve(prog, argv, envp);
	if (!strcmp(variant, "execveat")) {
		char dir[512];
		snprintf(dir, sizeof dir, "%s", prog);
		int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		return execveat(dfd, file, argv, envp, 0);
	}
	if (!strcmp(variant, "fexecve")) {
		int fd = open(prog, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		return fexecve(fd, argv, envp);
	}
	if (!strcmp(variant, "execvpe"))
		return execvpe(file, argv, envp);
	if (!strcmp(variant, "execle"))
		return execle(prog, file, (char *)NULL, envp);
	if (!strcmp(variant, "posix_spawn"))
		return posix_spawn(spawned, prog, NULL, NULL, argv, envp);
	if (!strcmp(variant, "posix_spawnp"))
		return posix_spawnp(spawned, file, NULL, NULL, argv, envp);
	/* the forms that take environ */
	environ = envp;
	if (!strcmp(variant, "execv"))
		return execv(prog, argv);
	if (!strcmp(variant, "execvp"))
		return execvp(file, argv);
	if (!strcmp(variant, "execl"))
		return execl(prog, file, (char *)NULL);
	if (!strcmp(variant, "execlp"))
		return execlp(file, file, (char *)NULL);
	die("unknown variant %s", variant);
}

static int wait_ok(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int run(const char *mode, const char *variant, const char *prog, int count)
{
	char dir[512], base[512];
	snprintf(dir, sizeof dir, "%s", prog);
	snprintf(base, sizeof base, "%s", prog);
	const char *file = basename(base);
	int search = !strcmp(variant, "execvp") || !strcmp(variant, "execvpe") ||
	             !strcmp(variant, "execlp") || !strcmp(variant, "posix_spawnp");
	if (search)
		setenv("PATH", dirname(dir), 1);
	strip_env();
	char **envp = !strcmp(mode, "strip") ? stripped : environ;
	listen_once(getenv("EXECPROBE_INHERIT") != NULL);
	/* a master that drops its effective uid after listening (squid): its execs are secure */
	const char *euid = getenv("EXECPROBE_EUID");
	if (euid && seteuid((uid_t)num_arg("EXECPROBE_EUID", euid, 0, 65535)) != 0)
		die("seteuid %s: %s", euid, strerror(errno));
	int ok = 0;
	for (int i = 0; i < count; i++) {
		pid_t pid;
		if (!strncmp(variant, "posix_spawn", 11)) {
			int r = do_exec(variant, prog, file, envp, &pid);
			if (r == 0)
				ok += wait_ok(pid);
			else
				fprintf(stderr, "execprobe: %s: %s\n", variant, strerror(r));
			continue;
		}
		if (!strcmp(variant, "vfork")) {
			char *argv[] = {(char *)file, NULL};
			pid = vfork();
			if (pid == 0) {
				execve(prog, argv, envp);
				_exit(127);
			}
		} else {
			pid = fork();
			if (pid == 0) {
				do_exec(variant, prog, file, envp, NULL);
				fprintf(stderr, "execprobe: %s %s: %s\n", variant, prog, strerror(errno));
				_exit(127);
			}
		}
		if (pid < 0)
			die("fork: %s", strerror(errno));
		ok += wait_ok(pid);
	}
	listen_once(0);
	printf("RUN variant=%s ok=%d count=%d pid=%ld\n", variant, ok, count, (long)getpid());
	return ok == count ? 0 : 1;
}

/* A failing exec returns: its result and errno are what the test compares. */
static int fail_all(void)
{
	static const char *const variants[] = {"execve", "execveat", "fexecve", "execv",
	                                       "execvp", "execvpe", "execl", "execlp",
	                                       "execle", "posix_spawn", "posix_spawnp"};
	char **env = environ;
	for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
		pid_t pid;
		errno = 0;
		int r = do_exec(variants[i], "/nonexistent/dir/no-such-program", "no-such-program",
		                env, &pid);
		environ = env;
		printf("FAIL variant=%s ret=%d errno=%d\n", variants[i], r, errno);
	}
	char *argv[] = {"true", NULL};
	static volatile uintptr_t unmapped = 8; /* an address the compiler cannot see through */
	errno = 0;
	int r = execve("/bin/true", argv, (char **)unmapped);
	printf("FAIL variant=execve-bad-envp ret=%d errno=%d\n", r, errno);
	char *bad_entry[] = {"A=1", (char *)unmapped, NULL};
	errno = 0;
	r = execve("/bin/true", argv, bad_entry);
	printf("FAIL variant=execve-bad-entry ret=%d errno=%d\n", r, errno);
	errno = 0;
	r = execve((const char *)unmapped, argv, environ);
	printf("FAIL variant=execve-bad-path ret=%d errno=%d\n", r, errno);
	errno = 0;
	r = execve("", argv, environ);
	printf("FAIL variant=execve-empty-path ret=%d errno=%d\n", r, errno);
	errno = 0;
	r = execveat(-1, "true", argv, environ, 0);
	printf("FAIL variant=execveat-bad-fd ret=%d errno=%d\n", r, errno);
	errno = 0;
	r = fexecve(-1, argv, environ);
	printf("FAIL variant=fexecve-bad-fd ret=%d errno=%d\n", r, errno);
	/* and a call that succeeds leaves errno as libc leaves it */
	pid_t pid;
	errno = 77;
	r = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ);
	printf("FAIL variant=posix_spawn-ok ret=%d errno=%d\n", r, errno);
	if (r == 0)
		wait_ok(pid);
	return 0;
}

int main(int argc, char **argv)
{
	prog_name = "execprobe";
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 5 && !strcmp(argv[1], "run"))
		return run(argv[2], argv[3], argv[4],
		           argc > 5 ? (int)num_arg("COUNT", argv[5], 1, 1000) : 1);
	if (argc == 2 && !strcmp(argv[1], "fail"))
		return fail_all();
	die("usage: execprobe run strip|keep VARIANT PROG [COUNT] | execprobe fail");
}
