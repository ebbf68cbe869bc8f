/* fdops: descriptor and process scenarios for the hardening tests.  It knows nothing of
 * socktune: a test runs it with and without the preloaded library and compares, or checks
 * the library's log.  Each mode prints key=value lines.
 *
 *   fdops dup         dup2/dup3 of untouched sockets onto a tuned listener and connection
 *                     numbers; the app's setsockopt there, read back
 *   fdops closerange  close_range over tuned sockets; the numbers reused by socketpair()
 *   fdops signal      a signal handler closes a tuned listener and connection; numbers reused
 *   fdops bigfd       a listener moved with dup2 beyond the library's table (RLIMIT_NOFILE
 *                     raised to 200000 after the table was sized), 3 connections accepted there
 *   fdops spawn       posix_spawn and vfork children (exec "fdops child"), one vfork child
 *                     closing the parent's listener number before exec; then the parent accepts
 *   fdops execfds     the log file's open flags, then exec "fdops fdlist"
 *   fdops child       print the open descriptors, then make a listener and print its TCP_NODELAY
 *   fdops fdlist      print the open descriptors
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "common.h"

extern char **environ;
static const char *self;

static int get_int(int fd, int level, int opt)
{
	int v = -1;
	socklen_t len = sizeof v;
	if (getsockopt(fd, level, opt, &v, &len) != 0)
		return -errno;
	return v;
}

static void set_int(int fd, int level, int opt, int v)
{
	if (setsockopt(fd, level, opt, &v, sizeof v) != 0)
		printf("setsockopt fd-level=%d opt=%d errno=%d\n", level, opt, errno);
}

static int listener(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof *a;
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof *a) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)a, &len) != 0)
		die("listener: %s", strerror(errno));
	return fd;
}

static int client(const struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof *a) != 0)
		die("connect: %s", strerror(errno));
	return fd;
}

static void show(const char *what, int fd)
{
	printf("%s nodelay=%d rcvbuf=%d keepalive=%d priority=%d\n", what,
	       get_int(fd, IPPROTO_TCP, TCP_NODELAY), get_int(fd, SOL_SOCKET, SO_RCVBUF),
	       get_int(fd, SOL_SOCKET, SO_KEEPALIVE), get_int(fd, SOL_SOCKET, SO_PRIORITY));
}

/* The app's own settings on a number that now names an untouched socket. */
static void app_sets(const char *what, int fd)
{
	set_int(fd, SOL_SOCKET, SO_RCVBUF, 4096);
	set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 0);
	set_int(fd, SOL_SOCKET, SO_PRIORITY, 1);
	if (get_int(fd, SOL_SOCKET, SO_TYPE) == SOCK_STREAM &&
	    get_int(fd, SOL_SOCKET, SO_DOMAIN) != AF_UNIX)
		set_int(fd, IPPROTO_TCP, TCP_NODELAY, 0);
	show(what, fd);
}

static void mode_dup(void)
{
	struct sockaddr_in a;
	int l = listener(&a), c = client(&a), conn = accept(l, NULL, NULL);
	int c2 = client(&a), conn2 = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	int sp[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
	int fresh = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	printf("dup2 conn<-fresh=%d\n", dup2(fresh, conn) == conn);
	app_sets("conn-now-fresh-tcp", conn);
	printf("dup3 conn2<-unix=%d\n", dup3(sp[0], conn2, O_CLOEXEC) == conn2);
	app_sets("conn2-now-unix", conn2);
	printf("dup3 listener<-udp=%d\n", dup3(udp, l, O_CLOEXEC) == l);
	app_sets("listener-now-udp", l);
	/* a tuned connection duplicated onto a new number: the same socket, the same rules */
	int l2 = listener(&a), c3 = client(&a), conn3 = accept(l2, NULL, NULL);
	printf("dup2 high<-conn3=%d\n", dup2(conn3, 300) == 300);
	show("conn3-copy", 300);
	char b[8];
	ssize_t w = write(c3, "x", 1);
	printf("read-copy=%zd wrote=%zd\n", read(300, b, sizeof b), w);
	close(300);
	close(conn3), close(c3), close(l2);
	close(c), close(c2), close(conn), close(conn2), close(sp[0]), close(sp[1]), close(fresh);
	close(udp), close(l);
}

/* Numbers closed without our table hearing of it would keep a stale "tuned" mark; the next
 * socket on that number, made by a call the library does not hook (socketpair), would then
 * have the app's settings swallowed. */
static void reuse_check(const char *what, int expect_lo)
{
	int sp[2], sq[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sq);
	printf("%s reused=%d\n", what, sp[0] == expect_lo);
	char n[300];
	for (int i = 0; i < 2; i++) {
		snprintf(n, sizeof n, "%s-sp%d", what, i);
		app_sets(n, sp[i]);
		snprintf(n, sizeof n, "%s-sq%d", what, i);
		app_sets(n, sq[i]);
	}
	close(sp[0]), close(sp[1]), close(sq[0]), close(sq[1]);
}

static void mode_closerange(void)
{
	struct sockaddr_in a;
	int l = listener(&a), c = client(&a), conn = accept(l, NULL, NULL);
	/* CLOSE_RANGE_CLOEXEC (4) only marks: the tuned sockets stay and stay tuned */
	printf("close_range-cloexec=%d\n", libc_close_range((unsigned)l, (unsigned)conn, 4));
	show("conn-after-cloexec", conn);
	printf("close_range=%d\n", libc_close_range((unsigned)l, ~0U, 0));
	reuse_check("closerange", l);
	(void)c;
}

static int sig_l = -1, sig_conn = -1;
static void on_usr1(int sig)
{
	(void)sig;
	close(sig_conn);
	close(sig_l);
}

static void mode_signal(void)
{
	struct sockaddr_in a;
	int l = listener(&a), c = client(&a), conn = accept(l, NULL, NULL);
	sig_l = l, sig_conn = conn;
	ssize_t w = write(c, "abc", 3);
	char b[8];
	printf("read=%zd wrote=%zd\n", read(conn, b, sizeof b), w);
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	reuse_check("signal", l < conn ? l : conn);
	close(c);
}

static void mode_bigfd(void)
{
	struct sockaddr_in a;
	int l = listener(&a); /* the library's table is made now, from the hard limit then */
	struct rlimit rl = {.rlim_cur = 200000, .rlim_max = 200000}; /* needs CAP_SYS_RESOURCE */
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		printf("skip=raise-limit errno=%d\n", errno);
		return;
	}
	int big = 150000;
	printf("dup2-big=%d\n", dup2(l, big) == big);
	close(l);
	for (int i = 0; i < 3; i++) {
		int c = client(&a);
		int conn = accept(big, NULL, NULL);
		int conn_big = dup2(conn, big + 1 + i);
		close(conn);
		ssize_t w = write(c, "hi", 2);
		char b[8];
		ssize_t r = read(conn_big, b, sizeof b);
		printf("conn%d accepted=%d read=%zd wrote=%zd\n", i, conn >= 0, r, w);
		set_int(conn_big, IPPROTO_TCP, TCP_NODELAY, 0);
		printf("conn%d app-nodelay=%d\n", i, get_int(conn_big, IPPROTO_TCP, TCP_NODELAY));
		close(conn_big);
		close(c);
	}
	printf("close_range-big=%d\n", libc_close_range((unsigned)big, ~0U, 0));
	printf("listener-closed=%d\n", fcntl(big, F_GETFD) == -1 && errno == EBADF);
}

static void print_fds(const char *who)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		die("opendir: %s", strerror(errno));
	printf("%s pid=%ld fds=", who, (long)getpid());
	struct dirent *e;
	const char *sep = "";
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		char p[300], t[256];
		snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(p, t, sizeof t - 1);
		t[n > 0 ? n : 0] = '\0';
		printf("%s%s:%s", sep, e->d_name, t);
		sep = ",";
	}
	printf("\n");
	closedir(d);
}

static void mode_child(void)
{
	print_fds("child");
	struct sockaddr_in a;
	int l = listener(&a);
	printf("child listener-nodelay=%d\n", get_int(l, IPPROTO_TCP, TCP_NODELAY));
	close(l);
}

static void run_child(const char *how, pid_t p)
{
	int st = -1;
	waitpid(p, &st, 0);
	printf("%s status=%d\n", how, st);
}

static void mode_spawn(void)
{
	struct sockaddr_in a;
	int l = listener(&a);
	char *argv_child[] = {(char *)self, "child", NULL};
	pid_t p;
	fflush(stdout);
	if (posix_spawn(&p, self, NULL, NULL, argv_child, environ) != 0)
		die("posix_spawn failed");
	run_child("posix_spawn", p);

	fflush(stdout);
	p = vfork();
	if (p == 0) {
		execve(self, argv_child, environ);
		_exit(127);
	}
	run_child("vfork", p);

	/* a vfork child shares our memory until it execs: what it closes is its own */
	fflush(stdout);
	p = vfork();
	if (p == 0) {
		close(l);
		execve(self, argv_child, environ);
		_exit(127);
	}
	run_child("vfork-close", p);
	int c = client(&a), conn = accept(l, NULL, NULL);
	show("parent-conn", conn);
	close(conn), close(c), close(l);
}

static void mode_execfds(void)
{
	struct sockaddr_in a;
	int l = listener(&a); /* the library logs: its log file is open now */
	/* every descriptor that is not ours: the library's, with its open flags */
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd <= 2 || fd == l || fd == dirfd(d))
			continue;
		char p[64], line[256];
		snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
		FILE *f = fopen(p, "re");
		while (f && fgets(line, sizeof line, f))
			if (strncmp(line, "flags:", 6) == 0)
				printf("libfd fd=%d flags=%s", fd, line + 6 + strspn(line + 6, " \t"));
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	char *argv_child[] = {(char *)self, "fdlist", NULL};
	fflush(stdout);
	execve(self, argv_child, environ);
	die("execve: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	prog_name = "fdops";
	self = argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	const char *m = argc > 1 ? argv[1] : "";
	if (strcmp(m, "dup") == 0)
		mode_dup();
	else if (strcmp(m, "closerange") == 0)
		mode_closerange();
	else if (strcmp(m, "signal") == 0)
		mode_signal();
	else if (strcmp(m, "bigfd") == 0)
		mode_bigfd();
	else if (strcmp(m, "spawn") == 0)
		mode_spawn();
	else if (strcmp(m, "execfds") == 0)
		mode_execfds();
	else if (strcmp(m, "child") == 0)
		mode_child();
	else if (strcmp(m, "fdlist") == 0)
		print_fds("exec");
	else
		die("usage: fdops dup|closerange|signal|bigfd|spawn|execfds|child|fdlist");
	return 0;
}
