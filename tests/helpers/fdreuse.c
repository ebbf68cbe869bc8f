/* fdreuse: descriptor numbers reused where the library's hooks cannot see it, and children
 * that share or copy its memory.  Each mode prints one line of what the kernel reports, so
 * t_fdreuse.sh compares a run under the library with a plain one (or with the policy).
 *
 *   fdreuse MODE 4|6 [N]
 *   accept-race      a listener closed while a thread is blocked in accept() on it; its
 *                    number taken by a new socket(), which listens once that accept returned
 *                    a connection of the old one:   NEW same=1 nodelay=.. backlog=..
 *   fclose-pair      an accepted connection closed by fclose(fdopen()) (no hook sees it), its
 *                    number taken by socketpair(); the app sets SO_RCVBUF 8192 there and
 *                    reads from it:                  UNIX same=1 rcvbuf=..
 *   fclose-raw       the same, the number taken by a UNIX socket made with syscall()
 *   fork-raw         a child made by _Fork() (no atfork handlers) closes the listener and
 *                    makes a UNIX socket by syscall() under its number:  UNIX same=1 rcvbuf=..
 *   vfork-close      a vfork() child closes an accepted connection before _exit(); the parent
 *                    then reads three requests on it:   READS 3
 *   reload N         N listeners, each listen()ed and close()d; then one more, whose
 *                    connection reports:   LAST priority=.. nodelay=..
 *   reload-udp N     the same, each closed by syscall() and its number taken by a UDP socket
 *   reload-file N    the same, each closed by syscall() and its number taken by open()
 *   unix-only        a UNIX stream listener, one connection accepted and read:  UNIX ok
 *   inherit-child    a listener with the app's own SO_RCVBUF (64 KiB), left open across the
 *                    fork and exec of a child that only runs true(1); then one accept:
 *                    PARENT rcvbuf.before=.. rcvbuf.after=..
 *   unix-dup         a UNIX socket closed by fclose(fdopen()) (no hook sees it), its number
 *                    taken by dup() (no hook either) of a TCP socket, which then listens:
 *                    DUP same=1 backlog=.. nodelay=..
 *   scm-listener     a process that never makes a TCP socket receives a listener over a
 *                    UNIX socket (SCM_RIGHTS, as in a seamless reload) and accepts on it:
 *                    RECEIVED backlog=.. nodelay=..   (the accepted connection's)
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "common.h"

static int fam = AF_INET;

static unsigned port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &len);
	return ntohs(fam == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                             : ((struct sockaddr_in *)&ss)->sin_port);
}

static int bind_listen(int fd, int backlog)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(fam, 0, &ss);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, backlog) != 0)
		die("bind/listen: %s", strerror(errno));
	return fd;
}

static int listener(void)
{
	int fd = socket(fam, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	return bind_listen(fd, 5);
}

static int client_of(unsigned port)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(fam, port, &ss);
	int fd = socket(fam, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) != 0)
		die("connect: %s", strerror(errno));
	return fd;
}

/* ---- accept-race ---- */
static int race_fd;
static _Atomic int race_done;

static void *blocked_accept(void *arg)
{
	(void)arg;
	int c = accept(race_fd, NULL, NULL); /* returns a connection of the closed listener */
	race_done = c >= 0 ? 1 : -1;
	return NULL;
}

static void accept_race(void)
{
	race_fd = listener();
	unsigned port = port_of(race_fd);
	pthread_t t;
	pthread_create(&t, NULL, blocked_accept, NULL);
	usleep(100000); /* let it block */
	int old = race_fd;
	close(old);
	int s = socket(fam, SOCK_STREAM, 0);
	int c = client_of(port); /* the old listener lives on while the accept holds it */
	for (int i = 0; i < 500 && !race_done; i++)
		usleep(10000);
	bind_listen(s, 5);
	printf("NEW same=%d accepted=%d nodelay=%d backlog=%ld\n", s == old, race_done == 1,
	       sockopt_int(s, IPPROTO_TCP, TCP_NODELAY), listen_backlog(s));
	close(c);
	if (race_done)
		pthread_join(t, NULL);
}

/* ---- an accepted connection whose number is reused behind the hooks' back ---- */
static int accepted_conn(int *lfd, int *cli)
{
	*lfd = listener();
	*cli = client_of(port_of(*lfd));
	int c = accept(*lfd, NULL, NULL);
	if (c < 0)
		die("accept: %s", strerror(errno));
	return c;
}

static void unix_report(int old, int u, int peer)
{
	int v = 8192;
	setsockopt(u, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
	char b[4];
	if (peer >= 0 && write(peer, "abc", 3) == 3)
		(void)!read(u, b, sizeof b); /* a receive on a number once marked for quick-ack */
	printf("UNIX same=%d rcvbuf=%d\n", u == old, sockopt_int(u, SOL_SOCKET, SO_RCVBUF));
}

static void fclose_reuse(int raw)
{
	int lfd, cli, c = accepted_conn(&lfd, &cli);
	FILE *f = fdopen(c, "r+");
	if (!f)
		die("fdopen: %s", strerror(errno));
	fclose(f); /* closes c inside libc: no hook sees it */
	int sv[2] = {-1, -1};
	if (raw)
		sv[0] = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	else if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair: %s", strerror(errno));
	unix_report(c, sv[0], sv[1]);
}

static void unix_dup(void)
{
	int u = socket(AF_UNIX, SOCK_STREAM, 0), t = socket(fam, SOCK_STREAM, 0);
	if (u < 0 || t < 0)
		die("socket: %s", strerror(errno));
	FILE *f = fdopen(u, "r+");
	if (!f)
		die("fdopen: %s", strerror(errno));
	fclose(f); /* closes u inside libc: no hook sees it */
	int d = dup(t);
	if (d < 0)
		die("dup: %s", strerror(errno));
	close(t);
	bind_listen(d, 5);
	printf("DUP same=%d backlog=%ld nodelay=%d\n", d == u, listen_backlog(d),
	       sockopt_int(d, IPPROTO_TCP, TCP_NODELAY));
}

static void fork_raw(void)
{
	int lfd = listener();
	fflush(stdout);
	pid_t pid = (pid_t)_Fork();
	if (pid == 0) {
		close(lfd);
		int u = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
		unix_report(lfd, u, -1);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
}

/* ---- a vfork child closes a quick-ack connection ---- */
static void vfork_close(void)
{
	int lfd, cli, c = accepted_conn(&lfd, &cli);
	pid_t pid = vfork();
	if (pid == 0) {
		close(c); /* the child's copy; its memory is the parent's */
		_exit(0);
	}
	int st, reads = 0;
	waitpid(pid, &st, 0);
	char b[16];
	for (int i = 0; i < 3; i++) {
		if (write(cli, "req", 3) != 3)
			break;
		if (read_full(c, b, 3, now_us() + 5000000) == 3)
			reads++;
	}
	printf("READS %d\n", reads);
}

/* ---- listener reloads ---- */
static void reload(int how, int n)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max; /* reload-file keeps a descriptor per listener */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int i = 0; i < n; i++) {
		int fd = listener();
		if (how == 0) {
			close(fd);
			continue;
		}
		syscall(SYS_close, fd);
		int other = how == 1 ? socket(fam, SOCK_DGRAM, 0) : open("/dev/null", O_RDONLY);
		if (other != fd)
			die("number %d not reused (got %d)", fd, other);
		if (how == 1)
			close(other); /* the UDP socket's number is the next listener's */
		/* the file stays open: the next listener gets a new number, and no hook ever
		 * sees this one again */
	}
	int lfd, cli, c = accepted_conn(&lfd, &cli);
	printf("LAST priority=%d nodelay=%d\n", sockopt_int(c, SOL_SOCKET, SO_PRIORITY),
	       sockopt_int(c, IPPROTO_TCP, TCP_NODELAY));
}

static void unix_only(void)
{
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "fdreuse-%d", (int)getpid()); /* abstract */
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
	int l = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(l, (struct sockaddr *)&a, len) || listen(l, 5) || connect(c, (struct sockaddr *)&a, len))
		die("unix: %s", strerror(errno));
	int s = accept(l, NULL, NULL);
	char b[4];
	if (s < 0 || write(c, "abc", 3) != 3 || read_full(s, b, 3, now_us() + 5000000) != 3)
		die("unix accept/read: %s", strerror(errno));
	printf("UNIX ok\n");
}

static void inherit_child(void)
{
	int l = socket(fam, SOCK_STREAM, 0); /* no SOCK_CLOEXEC: the child inherits it */
	int v = 65536;
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
	bind_listen(l, 16);
	int before = sockopt_int(l, SOL_SOCKET, SO_RCVBUF);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execlp("true", "true", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	int c = client_of(port_of(l)), a = accept(l, NULL, NULL);
	printf("PARENT rcvbuf.before=%d rcvbuf.after=%d accepted=%d\n", before,
	       sockopt_int(l, SOL_SOCKET, SO_RCVBUF), a >= 0);
	close(c);
}

static void scm_listener(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair: %s", strerror(errno));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) { /* the old process: makes the listener (by syscall(), so that no
	                  * library tunes it here), hands it over, connects to it */
		struct sockaddr_storage ss;
		socklen_t len = loopback_addr(fam, 0, &ss);
		int l = (int)syscall(SYS_socket, fam, SOCK_STREAM, 0);
		if (l < 0 || syscall(SYS_bind, l, &ss, len) || syscall(SYS_listen, l, 5))
			_exit(1);
		char one = 1;
		struct iovec iov = {&one, 1};
		char ctl[CMSG_SPACE(sizeof(int))];
		memset(ctl, 0, sizeof ctl);
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
		                    .msg_controllen = sizeof ctl};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &l, sizeof l);
		unsigned port = port_of(l);
		if (sendmsg(sv[1], &mh, 0) != 1)
			_exit(1);
		char go;
		if (read(sv[1], &go, 1) != 1) /* the new process took it: now a client */
			_exit(1);
		int c = client_of(port);
		(void)!read(sv[1], &go, 1);
		close(c);
		_exit(0);
	}
	char one;
	struct iovec iov = {&one, 1};
	char ctl[CMSG_SPACE(sizeof(int))];
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
	                    .msg_controllen = sizeof ctl};
	if (recvmsg(sv[0], &mh, 0) != 1 || !CMSG_FIRSTHDR(&mh))
		die("recvmsg: %s", strerror(errno));
	int l;
	memcpy(&l, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof l);
	if (write(sv[0], "g", 1) != 1)
		die("write");
	int c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept: %s", strerror(errno));
	printf("RECEIVED backlog=%ld nodelay=%d\n", listen_backlog(l), sockopt_int(c, IPPROTO_TCP, TCP_NODELAY));
	(void)!write(sv[0], "g", 1);
	int st;
	waitpid(pid, &st, 0);
}

int main(int argc, char **argv)
{
	prog_name = "fdreuse";
	if (argc < 3)
		die("usage: fdreuse MODE 4|6 [N]");
	fam = strcmp(argv[2], "6") == 0 ? AF_INET6 : AF_INET;
	int n = argc > 3 ? (int)num_arg("N", argv[3], 0, 100000) : 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(60);
	const char *m = argv[1];
	if (!strcmp(m, "accept-race")) accept_race();
	else if (!strcmp(m, "fclose-pair")) fclose_reuse(0);
	else if (!strcmp(m, "fclose-raw")) fclose_reuse(1);
	else if (!strcmp(m, "fork-raw")) fork_raw();
	else if (!strcmp(m, "unix-dup")) unix_dup();
	else if (!strcmp(m, "vfork-close")) vfork_close();
	else if (!strcmp(m, "reload")) reload(0, n);
	else if (!strcmp(m, "reload-udp")) reload(1, n);
	else if (!strcmp(m, "reload-file")) reload(2, n);
	else if (!strcmp(m, "unix-only")) unix_only();
	else if (!strcmp(m, "scm-listener")) scm_listener();
	else if (!strcmp(m, "inherit-child")) inherit_child();
	else die("unknown mode %s", m);
	return 0;
}
