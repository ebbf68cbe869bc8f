/* startup: the ways a server's listening socket comes to the process that calls listen()
 * and accept() on it, one per mode; the process that binds is never the one that listens
 * (except activate, where it is the exec'd one).  Knows nothing of socktune.
 *
 *   startup MODE 4|6 [BACKLOG]
 *
 *   exec      bind, then exec "startup serve FD": the new program listens (a supervisor
 *             that binds and execs its worker)
 *   spawn     bind, then posix_spawn "startup serve FD" and wait for it
 *   fork      bind, then fork: the child listens, no exec (a prefork supervisor)
 *   dup       bind, then fork: the child listens on a dup() of the socket, the original
 *             closed (h2o, php-fpm: one number per worker)
 *   scm       bind, then fork and exec "startup recv FD": the bound socket is sent over a
 *             UNIX socket (SCM_RIGHTS) to the exec'd program, which listens on it
 *   workers   bind, then exec two "startup serve FD" workers one after the other, each
 *             listening on the same socket (prefork workers started with spawn)
 *   raw       a socket made by a raw system call (as io_uring's IORING_OP_SOCKET would: no
 *             socket() call), bound and listened in the same process, which makes no other
 *             TCP socket
 *   rawlisten a socket made by socket(), listened by a raw system call (as io_uring's
 *             IORING_OP_LISTEN would: no listen() call), accepted through libc; its LISTENER
 *             line comes after the accept (where a listener no hook saw listen is tuned)
 *   activate  bind and listen, move it to descriptor 3, set LISTEN_FDS=1 and exec
 *             "startup serve 3" (socket activation done by hand: LISTEN_PID is the same pid
 *             after exec); serve listens again, as systemd-activated servers do
 *
 * The serving process prints (stdout, flushed):
 *   PORT n
 *   LISTENER pid=P backlog=N nodelay=N
 *   CONN nodelay=N
 * after listen(fd, BACKLOG) (default 16) and one accept(); then it exits. */
#include <fcntl.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "common.h"

extern char **environ;

static int backlog = 16;

static int bound_socket(int family)
{
	int fd = socket(family, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, 0, &ss);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0)
		die("bind: %s", strerror(errno));
	return fd;
}

static void say_listener(int fd)
{
	printf("LISTENER pid=%d backlog=%ld nodelay=%d\n", (int)getpid(), listen_backlog(fd),
	       sockopt_int(fd, IPPROTO_TCP, TCP_NODELAY));
	fflush(stdout);
}

/* listen (through libc, or by a raw system call), say what the kernel has, accept one
 * connection, say what it carries */
static int serve(int fd, int print_port, int raw_listen)
{
	if ((raw_listen ? syscall(SYS_listen, fd, backlog) : listen(fd, backlog)) != 0)
		die("listen: %s", strerror(errno));
	if (print_port)
		printf("PORT %u\n", local_port(fd));
	if (!raw_listen)
		say_listener(fd);
	fflush(stdout);
	int c;
	while ((c = accept(fd, NULL, NULL)) < 0 && (errno == EINTR || errno == ECONNABORTED))
		;
	if (c < 0)
		die("accept: %s", strerror(errno));
	if (raw_listen)
		say_listener(fd);
	printf("CONN nodelay=%d\n", sockopt_int(c, IPPROTO_TCP, TCP_NODELAY));
	fflush(stdout);
	close(c);
	return 0;
}

static void exec_self(const char *self, const char *role, int fd)
{
	char num[16], bl[16];
	snprintf(num, sizeof num, "%d", fd);
	snprintf(bl, sizeof bl, "%d", backlog);
	execl(self, self, role, num, bl, (char *)NULL);
	die("exec %s: %s", self, strerror(errno));
}

static int wait_child(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int spawn_serve(const char *self, int fd, int second)
{
	char num[16], bl[16];
	snprintf(num, sizeof num, "%d", fd);
	snprintf(bl, sizeof bl, "%d", backlog);
	char *args[] = {(char *)self, second ? "serve-again" : "serve", num, bl, NULL};
	pid_t pid;
	int e = posix_spawn(&pid, self, NULL, NULL, args, environ);
	if (e)
		die("posix_spawn: %s", strerror(e));
	return wait_child(pid);
}

int main(int argc, char **argv)
{
	prog_name = "startup";
	if (argc < 3)
		die("usage: startup exec|spawn|fork|dup|scm|workers|raw|rawlisten|activate 4|6 [BACKLOG]");
	const char *mode = argv[1], *self = "/proc/self/exe";
	if (argc > 3)
		backlog = (int)num_arg("BACKLOG", argv[3], 1, 65535);
	alarm(20); /* every run is bounded, whatever the client does */

	/* the roles the modes exec */
	if (!strcmp(mode, "serve") || !strcmp(mode, "serve-again"))
		return serve((int)num_arg("FD", argv[2], 0, 1 << 20), !strcmp(mode, "serve"), 0);
	if (!strcmp(mode, "recv")) {
		int fd = recv_fd((int)num_arg("FD", argv[2], 0, 1 << 20));
		if (fd < 0)
			die("recvmsg: no descriptor");
		return serve(fd, 1, 0);
	}

	int family = strcmp(argv[2], "6") == 0 ? AF_INET6 : AF_INET;
	if (!strcmp(mode, "activate")) {
		int fd = bound_socket(family);
		if (listen(fd, 4) != 0)
			die("listen: %s", strerror(errno));
		if (fd != 3 && (dup2(fd, 3) != 3 || close(fd) != 0))
			die("dup2: %s", strerror(errno));
		char pid[16];
		snprintf(pid, sizeof pid, "%d", (int)getpid());
		setenv("LISTEN_FDS", "1", 1);
		setenv("LISTEN_PID", pid, 1);
		exec_self(self, "serve", 3);
	}
	if (!strcmp(mode, "raw")) {
		int fd = (int)syscall(SYS_socket, family, SOCK_STREAM, 0);
		struct sockaddr_storage ss;
		socklen_t len = loopback_addr(family, 0, &ss);
		if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0)
			die("raw socket, bind: %s", strerror(errno));
		return serve(fd, 1, 0);
	}
	int fd = bound_socket(family);
	if (!strcmp(mode, "rawlisten"))
		return serve(fd, 1, 1);
	if (!strcmp(mode, "exec"))
		exec_self(self, "serve", fd);
	if (!strcmp(mode, "spawn"))
		return spawn_serve(self, fd, 0);
	if (!strcmp(mode, "workers")) {
		/* the second worker is started once the first has served its connection; it listens
		 * on the same socket again (the port is printed once, by the first) */
		int r = spawn_serve(self, fd, 0);
		return r ? r : spawn_serve(self, fd, 1);
	}
	if (!strcmp(mode, "fork") || !strcmp(mode, "dup")) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			if (!strcmp(mode, "dup")) {
				int copy = dup(fd);
				if (copy < 0)
					die("dup: %s", strerror(errno));
				close(fd);
				fd = copy;
			}
			_exit(serve(fd, 1, 0));
		}
		close(fd);
		return wait_child(pid);
	}
	if (!strcmp(mode, "scm")) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
			die("socketpair: %s", strerror(errno));
		int flags = fcntl(fd, F_GETFD);
		fcntl(fd, F_SETFD, flags | FD_CLOEXEC); /* only the message carries it over */
		pid_t pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			int keep = dup(sv[1]); /* without FD_CLOEXEC: the exec'd program reads from it */
			if (keep < 0)
				die("dup: %s", strerror(errno));
			exec_self(self, "recv", keep);
		}
		close(sv[1]);
		send_fd(sv[0], fd);
		close(fd);
		return wait_child(pid);
	}
	die("unknown mode %s", mode);
}
