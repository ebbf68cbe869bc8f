/* prefork: the process shapes of real servers, for doctor's tests.  Knows nothing of socktune.
 *
 *   prefork [-4|-6] [-p PORT] [-b BACKLOG] [-w WORKERS | -P] [-T] [-t SECONDS]
 *
 *   -w N   nginx's shape: the master listens, forks N workers that accept and serve; the
 *          master itself only waits (default: one process that accepts and serves)
 *   -P     postgres's: the master accepts and forks a backend per connection, which closes
 *          the listener and serves the connection
 *   -T     redis's title: every process writes "prefork ADDR:PORT" over its argv and fills
 *          the rest of it with NULs, as setproctitle does (the kernel then shows the title and
 *          empty words)
 *   -b N   listen backlog (default 5)
 *   -t S   every process gives up after S seconds (default 30)
 *
 * A connection is served as HTTP/1.1 keep-alive: each request (up to its blank line) gets
 * its headers and its body in two writes, the pattern whose second write waits under Nagle
 * for the client's delayed ACK (python's http.server).
 *
 * Output (stdout, flushed): PORT n, then one "PID pid role=master|worker|backend" line per
 * process. */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "common.h"

static char *title_at;  /* argv's memory, from argv[0] to the end of the last word */
static size_t title_room;

static void set_title(const char *title)
{
	if (!title_at)
		return;
	size_t n = strlen(title) < title_room ? strlen(title) : title_room - 1;
	memset(title_at, 0, title_room);
	memcpy(title_at, title, n);
}

/* A child: its own time limit, and gone with the master (the test stops the master) */
static void child(int timeout, const char *role)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	alarm((unsigned)timeout);
	printf("PID %d role=%s\n", (int)getpid(), role);
	fflush(stdout);
}

static void say(const char *role)
{
	printf("PID %d role=%s\n", (int)getpid(), role);
	fflush(stdout);
}

/* One keep-alive connection until the client closes */
static void serve(int fd)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
	                           "Content-Length: 100\r\nConnection: keep-alive\r\n\r\n";
	char body[100], buf[4096];
	memset(body, 'b', sizeof body);
	size_t have = 0;
	for (;;) {
		char *end = have ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
		if (!end) {
			if (have == sizeof buf)
				break;
			ssize_t r = read(fd, buf + have, sizeof buf - have);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			have += (size_t)r;
			continue;
		}
		size_t used = (size_t)(end - buf) + 4;
		memmove(buf, buf + used, have - used);
		have -= used;
		if (write_full(fd, head, sizeof head - 1) != 0 || write_full(fd, body, sizeof body) != 0)
			break;
	}
	close(fd);
}

static int next_conn(int lfd)
{
	for (;;) {
		int c = accept(lfd, NULL, NULL);
		if (c >= 0 || (errno != EINTR && errno != ECONNABORTED))
			return c;
	}
}

int main(int argc, char **argv)
{
	prog_name = "prefork";
	int family = AF_INET, port = 0, backlog = 5, workers = 0, backends = 0, title = 0;
	int timeout = 30, c;
	while ((c = getopt(argc, argv, "46p:b:w:PTt:")) != -1) {
		switch (c) {
		case '4': family = AF_INET; break;
		case '6': family = AF_INET6; break;
		case 'p': port = (int)num_arg("-p", optarg, 0, 65535); break;
		case 'b': backlog = (int)num_arg("-b", optarg, 1, 65535); break;
		case 'w': workers = (int)num_arg("-w", optarg, 1, 64); break;
		case 'P': backends = 1; break;
		case 'T': title = 1; break;
		case 't': timeout = (int)num_arg("-t", optarg, 1, 3600); break;
		default:
			fprintf(stderr, "usage: prefork [-4|-6] [-p PORT] [-b BACKLOG] [-w WORKERS | -P] "
			                "[-T] [-t SECONDS]\n");
			return 2;
		}
	}
	if (title) {
		title_at = argv[0];
		title_room = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
	}
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)timeout); /* (inherited by no child: each sets its own below) */
	int lfd = socket(family, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_storage ss;
	socklen_t len = loopback_addr(family, (unsigned)port, &ss);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, len) != 0 || listen(lfd, backlog) != 0)
		die("listener: %s", strerror(errno));
	struct sockaddr_storage me;
	socklen_t melen = sizeof me;
	getsockname(lfd, (struct sockaddr *)&me, &melen);
	unsigned bound = ntohs(me.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&me)->sin6_port
	                                                : ((struct sockaddr_in *)&me)->sin_port);
	char name[64];
	snprintf(name, sizeof name, "prefork %s:%u", family == AF_INET6 ? "[::1]" : "127.0.0.1",
	         bound);
	set_title(name);
	printf("PORT %u\n", bound);
	say("master");
	if (workers) {
		for (int k = 0; k < workers; k++)
			if (fork() == 0) {
				child(timeout, "worker");
				for (int cfd; (cfd = next_conn(lfd)) >= 0;)
					serve(cfd);
				_exit(0);
			}
		/* the master holds the listener and waits: its workers serve */
		while (wait(NULL) > 0 || errno == EINTR)
			;
		return 0;
	}
	if (backends)
		signal(SIGCHLD, SIG_IGN); /* (backends reaped by the kernel) */
	for (int cfd; (cfd = next_conn(lfd)) >= 0;) {
		if (!backends) {
			serve(cfd);
			continue;
		}
		if (fork() == 0) {
			close(lfd); /* a backend holds its connection, not the listener */
			child(timeout, "backend");
			serve(cfd);
			_exit(0);
		}
		close(cfd);
	}
	die("accept: %s", strerror(errno));
}
