/* kaclient: the client side of socktune's tests and benchmark.  Knows nothing of socktune.
 *
 *   kaclient http  [-n N] [-t MS] [-T S] [-u PATH] HOST PORT
 *       N keep-alive HTTP/1.1 GETs on one connection; each request one write, the
 *       response read in full (Content-Length).  The stall it shows: the server's Nagle
 *       holding the body behind the headers until this side's delayed ACK.
 *   kaclient split [-n N] [-t MS] [-T S] [-q REQ] [-r REPLY] HOST PORT
 *       N requests of REQ bytes on one connection, each written in TWO writes with Nagle on
 *       (the default), then REPLY bytes read.  The stall it shows: the second write waits
 *       for the server's delayed ACK of the first.
 *   kaclient burst [-n N] [-t MS] [-T S] HOST PORT
 *       N concurrent non-blocking connects; each connect's time until it completes.  The
 *       stall it shows: SYNs dropped by a full accept queue, retransmitted after 1 s.
 *
 *   -n N     requests or connections (default 50; burst 300)
 *   -t MS    a request or connect slower than this counts in over= (default 20; burst 500)
 *   -T S     stop everything after S seconds (default 10)
 *
 * One machine-readable line on stdout, e.g.
 *   mode=split n=50 done=50 failed=0 over=48 threshold_ms=20 p50_us=41000 p99_us=44000 max_us=44100
 * done: completed requests/connects; failed: errors or unfinished at the deadline (those
 * also count in over=).  Exit 0 when every request or connect completed, 1 otherwise. */
#include <fcntl.h>
#include <signal.h>

#include "common.h"

struct opts {
	const char *mode, *host, *port, *path;
	int n, threshold_ms, total_s;
	size_t req, reply;
};

static void usage(void)
{
	fprintf(stderr, "usage: kaclient http|split|burst [-n N] [-t MS] [-T S] [-u PATH] "
	                "[-q REQ] [-r REPLY] HOST PORT\n");
	exit(2);
}

static void report(const struct opts *o, long long *lat, int done, int failed)
{
	qsort(lat, (size_t)done, sizeof lat[0], cmp_ll);
	int over = failed;
	for (int i = 0; i < done; i++)
		if (lat[i] > (long long)o->threshold_ms * 1000)
			over++;
	printf("mode=%s n=%d done=%d failed=%d over=%d threshold_ms=%d p50_us=%lld p99_us=%lld "
	       "max_us=%lld\n",
	       o->mode, o->n, done, failed, over, o->threshold_ms, percentile(lat, (size_t)done, 50),
	       percentile(lat, (size_t)done, 99), done ? lat[done - 1] : 0);
	fflush(stdout);
}

static int connect_blocking(const struct opts *o, long long deadline)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(o->host, o->port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&ss, len) != 0 && errno != EINPROGRESS)
		die("connect %s:%s: %s", o->host, o->port, strerror(errno));
	int err = 0;
	socklen_t elen = sizeof err;
	if (wait_fd(fd, POLLOUT, deadline) != 1)
		die("connect %s:%s: timed out", o->host, o->port);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
	if (err)
		die("connect %s:%s: %s", o->host, o->port, strerror(err));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* Read one HTTP/1.1 response with a Content-Length body.  0 ok, -1 error or timeout. */
static int read_response(int fd, char *buf, size_t cap, long long deadline)
{
	size_t have = 0;
	char *eoh = NULL;
	while (!eoh) {
		if (have + 1 >= cap || wait_fd(fd, POLLIN, deadline) != 1)
			return -1;
		ssize_t r = read(fd, buf + have, cap - 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		eoh = strstr(buf, "\r\n\r\n");
	}
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0 && strncmp(buf, "HTTP/1.0 200", 12) != 0)
		return -1;
	size_t head = (size_t)(eoh + 4 - buf);
	const char *cl = strcasestr(buf, "\r\nContent-Length:");
	if (!cl || cl > eoh)
		return -1; /* keep-alive needs a length */
	long long body = strtoll(cl + 17, NULL, 10);
	if (body < 0)
		return -1;
	long long rest = body - (long long)(have - head);
	while (rest > 0) {
		if (wait_fd(fd, POLLIN, deadline) != 1)
			return -1;
		ssize_t r = read(fd, buf, rest < (long long)cap ? (size_t)rest : cap);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		rest -= r;
	}
	return rest == 0 ? 0 : -1;
}

static int run_http(const struct opts *o, long long *lat)
{
	long long deadline = now_us() + (long long)o->total_s * 1000000;
	int fd = connect_blocking(o, deadline);
	char request[512];
	int len = snprintf(request, sizeof request,
	                   "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: keep-alive\r\n\r\n", o->path,
	                   o->host);
	if (len <= 0 || (size_t)len >= sizeof request)
		die("path too long");
	static char buf[1 << 16];
	int done = 0;
	for (int i = 0; i < o->n && now_us() < deadline; i++) {
		long long t0 = now_us();
		if (write_full(fd, request, (size_t)len) != 0 ||
		    read_response(fd, buf, sizeof buf, deadline) != 0)
			break;
		lat[done++] = now_us() - t0;
	}
	close(fd);
	return done;
}

static int run_split(const struct opts *o, long long *lat)
{
	long long deadline = now_us() + (long long)o->total_s * 1000000;
	int fd = connect_blocking(o, deadline);
	char *req = malloc(o->req), *rep = malloc(o->reply);
	if (!req || !rep)
		die("out of memory");
	memset(req, 'q', o->req);
	size_t first = o->req / 2;
	int done = 0;
	for (int i = 0; i < o->n && now_us() < deadline; i++) {
		long long t0 = now_us();
		/* two small writes, Nagle on: the second waits until the first is acknowledged */
		if (write_full(fd, req, first) != 0 || write_full(fd, req + first, o->req - first) != 0 ||
		    read_full(fd, rep, o->reply, deadline) != (ssize_t)o->reply)
			break;
		lat[done++] = now_us() - t0;
	}
	close(fd);
	free(req);
	free(rep);
	return done;
}

static int run_burst(const struct opts *o, long long *lat, int *failed)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(o->host, o->port, &ss);
	raise_nofile();
	int n = o->n;
	int *fds = malloc((size_t)n * sizeof *fds);
	long long *start = malloc((size_t)n * sizeof *start);
	struct pollfd *pfd = malloc((size_t)n * sizeof *pfd);
	int *idx = malloc((size_t)n * sizeof *idx);
	char *waiting = calloc((size_t)n, 1);
	if (!fds || !start || !pfd || !idx || !waiting)
		die("out of memory");
	int done = 0, pending = 0;
	*failed = 0;
	for (int i = 0; i < n; i++) {
		fds[i] = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (fds[i] < 0)
			die("socket %d: %s", i, strerror(errno));
		start[i] = now_us();
		if (connect(fds[i], (struct sockaddr *)&ss, len) == 0) {
			lat[done++] = now_us() - start[i]; /* completed at once */
		} else if (errno == EINPROGRESS) {
			waiting[i] = 1;
			pending++;
		} else {
			(*failed)++;
			close(fds[i]);
			fds[i] = -1;
		}
	}
	/* Every connection stays open until the end, so the server's accept queue is under the
	 * load of all of them at once. */
	long long deadline = now_us() + (long long)o->total_s * 1000000;
	while (pending > 0 && now_us() < deadline) {
		int m = 0;
		for (int i = 0; i < n; i++)
			if (waiting[i]) {
				pfd[m].fd = fds[i];
				pfd[m].events = POLLOUT;
				pfd[m].revents = 0;
				idx[m++] = i;
			}
		int r = poll(pfd, (nfds_t)m, ms_left(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		long long t = now_us();
		for (int j = 0; j < m; j++) {
			if (!pfd[j].revents)
				continue;
			int i = idx[j], err = 0;
			socklen_t elen = sizeof err;
			getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &elen);
			waiting[i] = 0;
			pending--;
			if (err)
				(*failed)++;
			else
				lat[done++] = t - start[i];
		}
	}
	*failed += pending; /* unfinished at the deadline */
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	free(start);
	free(pfd);
	free(idx);
	free(waiting);
	return done;
}

int main(int argc, char **argv)
{
	prog_name = "kaclient";
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		usage();
	struct opts o = {.mode = argv[1], .path = "/", .n = -1, .threshold_ms = -1, .total_s = 10,
	                 .req = 100, .reply = 100};
	int is_http = strcmp(o.mode, "http") == 0, is_split = strcmp(o.mode, "split") == 0,
	    is_burst = strcmp(o.mode, "burst") == 0;
	if (!is_http && !is_split && !is_burst)
		usage();
	optind = 2;
	int c;
	while ((c = getopt(argc, argv, "n:t:T:u:q:r:")) != -1) {
		switch (c) {
		case 'n': o.n = (int)num_arg("-n", optarg, 1, 2000000); break;
		case 't': o.threshold_ms = (int)num_arg("-t", optarg, 0, 3600000); break;
		case 'T': o.total_s = (int)num_arg("-T", optarg, 1, 3600); break;
		case 'u': o.path = optarg; break;
		case 'q': o.req = (size_t)num_arg("-q", optarg, 2, 65536); break;
		case 'r': o.reply = (size_t)num_arg("-r", optarg, 1, 1 << 20); break;
		default: usage();
		}
	}
	if (argc - optind != 2)
		usage();
	o.host = argv[optind];
	o.port = argv[optind + 1];
	if (o.n < 0)
		o.n = is_burst ? 300 : 50;
	if (o.threshold_ms < 0)
		o.threshold_ms = is_burst ? 500 : 20;

	long long *lat = calloc((size_t)o.n, sizeof *lat);
	if (!lat)
		die("out of memory");
	int done, failed = 0;
	if (is_burst) {
		done = run_burst(&o, lat, &failed);
	} else {
		done = is_http ? run_http(&o, lat) : run_split(&o, lat);
		failed = o.n - done;
	}
	report(&o, lat, done, failed);
	return done == o.n ? 0 : 1;
}
