/* resetsrv: a keep-alive HTTP server that sets TCP_NODELAY itself on every connection it
 * accepts, after the accept (as hyper 0.14 and Erlang's inets do), and answers each request
 * in two writes (the header, then the body): with Nagle on, the body waits for the client's
 * delayed ACK of the header.  Knows nothing of socktune.
 *
 *   resetsrv [-4|-6] [-p PORT] [-n CONNS] [-v VALUE] [-b BODY] [-t S] [-O] [-s OPT=VAL[,LEN]]...
 *     -n CONNS   connections served one after another, then exit 0 (default 1)
 *     -v VALUE   what it sets TCP_NODELAY to on each accepted connection (default 0)
 *     -b BODY    the body's size (default 100)
 *     -t S       give up after S seconds (default 20)
 *     -O         first, an outgoing connection of its own to its listener, TCP_NODELAY set
 *                to VALUE on it and read back (that connection is not served)
 *     -s OPT=VAL[,LEN]  then, on each accepted connection, setsockopt(OPT) to VAL (a number,
 *                or TCP_CONGESTION's name, passed without its NUL), with LEN as optlen (the
 *                value in its first bytes, zeros after: more than a page is what the kernel
 *                hands a cgroup hook cut short); in the order given, up to 8
 *
 * Stdout, one line each: "PORT N" once listening; "OUT nodelay=X" (-O); for each connection
 * "CONN nodelay=X set=RC" (X: getsockopt TCP_NODELAY after its own setsockopt, RC that
 * setsockopt's result: 0 or the errno), one "SET OPT=VAL rc=RC read=X" for each -s (RC that
 * call's result, 0 or the errno; X what getsockopt reads after it), then "DONE requests=N"
 * at its end. */
#include <fcntl.h>
#include <signal.h>

#include "common.h"

/* The options -s sets, by the names the kernel's headers give them */
static const struct {
	const char *name;
	int level, optname;
} opts[] = {
	{"TCP_KEEPIDLE", IPPROTO_TCP, TCP_KEEPIDLE},
	{"TCP_KEEPINTVL", IPPROTO_TCP, TCP_KEEPINTVL},
	{"TCP_KEEPCNT", IPPROTO_TCP, TCP_KEEPCNT},
	{"TCP_USER_TIMEOUT", IPPROTO_TCP, TCP_USER_TIMEOUT},
	{"TCP_MAXSEG", IPPROTO_TCP, TCP_MAXSEG},
	{"TCP_WINDOW_CLAMP", IPPROTO_TCP, TCP_WINDOW_CLAMP},
	{"TCP_NOTSENT_LOWAT", IPPROTO_TCP, TCP_NOTSENT_LOWAT},
	{"TCP_CONGESTION", IPPROTO_TCP, TCP_CONGESTION},
	{"TCP_DELACK_MAX_US", IPPROTO_TCP, 46}, /* (Linux 6.15; older headers lack it) */
	{"TCP_RTO_MAX_MS", IPPROTO_TCP, 44},    /* (Linux 6.15 too) */
	{"SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE},
	{"SO_PRIORITY", SOL_SOCKET, SO_PRIORITY},
	{"SO_MARK", SOL_SOCKET, SO_MARK},
	{"IP_TOS", IPPROTO_IP, IP_TOS},
	{"IPV6_TCLASS", IPPROTO_IPV6, IPV6_TCLASS},
};
#define MAX_SETS 8
struct set {
	int k;         /* index of opts */
	char val[64];  /* as given */
	long long len; /* optlen; 0: the value's own */
};

static struct set parse_set(const char *arg)
{
	struct set s = {.k = -1};
	const char *eq = strchr(arg, '=');
	for (size_t k = 0; eq && k < sizeof opts / sizeof opts[0]; k++)
		if (strlen(opts[k].name) == (size_t)(eq - arg) && !strncmp(arg, opts[k].name, (size_t)(eq - arg)))
			s.k = (int)k;
	if (s.k < 0)
		die("-s %s: OPT=VAL[,LEN] with OPT one of TCP_KEEPIDLE ... IPV6_TCLASS", arg);
	snprintf(s.val, sizeof s.val, "%s", eq + 1);
	char *comma = strchr(s.val, ',');
	if (comma) {
		*comma = '\0';
		s.len = num_arg("-s LEN", comma + 1, 1, 65536);
	}
	return s;
}

/* setsockopt as -s said, then read back: one SET line */
static void do_set(int fd, const struct set *s)
{
	static char buf[65536];
	int level = opts[s->k].level, name = opts[s->k].optname, rc, ival;
	size_t len;
	memset(buf, 0, sizeof buf);
	if (name == TCP_CONGESTION && level == IPPROTO_TCP) {
		len = strlen(s->val);
		memcpy(buf, s->val, len);
	} else {
		char *end;
		errno = 0;
		long long v = strtoll(s->val, &end, 0);
		if (errno || end == s->val || *end || v < INT32_MIN || v > INT32_MAX)
			die("-s %s=%s: not an int", opts[s->k].name, s->val);
		ival = (int)v;
		memcpy(buf, &ival, sizeof ival);
		len = sizeof ival;
	}
	if (s->len)
		len = (size_t)s->len;
	rc = setsockopt(fd, level, name, buf, (socklen_t)len) == 0 ? 0 : errno;
	char read[64] = "?";
	socklen_t rl = sizeof read - 1;
	memset(read, 0, sizeof read);
	if (name == TCP_CONGESTION && level == IPPROTO_TCP) {
		if (getsockopt(fd, level, name, read, &rl) != 0)
			snprintf(read, sizeof read, "err%d", errno);
	} else {
		int v = 0;
		rl = sizeof v;
		if (getsockopt(fd, level, name, &v, &rl) == 0)
			snprintf(read, sizeof read, "%d", v);
		else
			snprintf(read, sizeof read, "err%d", errno);
	}
	printf("SET %s=%s rc=%d read=%s\n", opts[s->k].name, s->val, rc, read);
}

static int nodelay_of(int fd)
{
	int v = -1;
	socklen_t l = sizeof v;
	if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &l) != 0)
		return -1;
	return v;
}

/* Requests until the client closes: each read to its blank line, each answered in two writes. */
static int serve(int c, size_t body, long long deadline)
{
	char buf[4096], head[128];
	static char payload[65536];
	memset(payload, 'x', sizeof payload);
	if (body > sizeof payload)
		body = sizeof payload;
	int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", body);
	size_t have = 0;
	int requests = 0;
	for (;;) {
		char *eor = have ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
		if (eor) {
			size_t used = (size_t)(eor + 4 - buf);
			memmove(buf, buf + used, have - used);
			have -= used;
			if (write_full(c, head, (size_t)hl) != 0 || write_full(c, payload, body) != 0)
				return requests;
			requests++;
			continue;
		}
		if (have == sizeof buf || wait_fd(c, POLLIN, deadline) != 1)
			return requests;
		ssize_t n = read(c, buf + have, sizeof buf - have);
		if (n <= 0)
			return requests;
		have += (size_t)n;
	}
}

int main(int argc, char **argv)
{
	int fam = AF_INET, conns = 1, value = 0, secs = 20, out = 0, opt, nsets = 0;
	static struct set sets[MAX_SETS];
	long long port = 0, body = 100;
	prog_name = "resetsrv";
	while ((opt = getopt(argc, argv, "46p:n:v:b:t:Os:")) != -1) {
		switch (opt) {
		case '4': fam = AF_INET; break;
		case '6': fam = AF_INET6; break;
		case 'p': port = num_arg("-p", optarg, 0, 65535); break;
		case 'n': conns = (int)num_arg("-n", optarg, 1, 100000); break;
		case 'v': value = (int)num_arg("-v", optarg, 0, 1); break;
		case 'b': body = num_arg("-b", optarg, 1, 65536); break;
		case 't': secs = (int)num_arg("-t", optarg, 1, 3600); break;
		case 'O': out = 1; break;
		case 's':
			if (nsets == MAX_SETS)
				die("-s: at most %d", MAX_SETS);
			sets[nsets++] = parse_set(optarg);
			break;
		default:
			fprintf(stderr, "usage: resetsrv [-4|-6] [-p PORT] [-n CONNS] [-v 0|1] [-b BODY] "
			                "[-t S] [-O] [-s OPT=VAL[,LEN]]...\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	long long deadline = now_us() + (long long)secs * 1000000;
	struct sockaddr_storage ss;
	socklen_t sl = parse_addr(fam == AF_INET ? "127.0.0.1" : "::1", "0", &ss);
	((struct sockaddr_in *)&ss)->sin_port = htons((unsigned short)port); /* (same offset in v6) */
	int l = socket(fam, SOCK_STREAM, 0), one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l < 0 || bind(l, (struct sockaddr *)&ss, sl) != 0 || listen(l, 64) != 0)
		die("listen: %s", strerror(errno));
	if (getsockname(l, (struct sockaddr *)&ss, &sl) != 0)
		die("getsockname: %s", strerror(errno));
	printf("PORT %u\n", ntohs(((struct sockaddr_in *)&ss)->sin_port));
	fflush(stdout);
	if (out) {
		int o = socket(fam, SOCK_STREAM, 0);
		if (o < 0 || connect(o, (struct sockaddr *)&ss, sl) != 0)
			die("connect: %s", strerror(errno));
		int rc = setsockopt(o, IPPROTO_TCP, TCP_NODELAY, &value, sizeof value) == 0 ? 0 : errno;
		printf("OUT nodelay=%d set=%d\n", nodelay_of(o), rc);
		fflush(stdout);
		if (wait_fd(l, POLLIN, deadline) == 1)
			close(accept(l, NULL, NULL));
		close(o);
	}
	for (int k = 0; k < conns; k++) {
		if (wait_fd(l, POLLIN, deadline) != 1)
			die("accept: no connection in time");
		int c = accept(l, NULL, NULL);
		if (c < 0)
			die("accept: %s", strerror(errno));
		int rc = setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &value, sizeof value) == 0 ? 0 : errno;
		printf("CONN nodelay=%d set=%d\n", nodelay_of(c), rc);
		for (int j = 0; j < nsets; j++)
			do_set(c, &sets[j]);
		fflush(stdout);
		int n = serve(c, (size_t)body, deadline);
		printf("DONE requests=%d\n", n);
		fflush(stdout);
		close(c);
	}
	return 0;
}
