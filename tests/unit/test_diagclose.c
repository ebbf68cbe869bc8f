/* sock_diag's destroy notifications (cli/host/diagclose.c): crafted datagrams parsed as the
 * kernel lays them out (one socket, two in a row, a tcp_info shorter or longer than ours, a
 * congestion name without its NUL) and hostile ones (a length past the datagram, a length
 * under a header, a message shorter than its body, an attribute past its message, another
 * message type, random bytes): each counted, none read past its end, none given as a socket
 * it is not.  Then, where this process may subscribe (CAP_NET_ADMIN), a real loopback
 * connection closed: its server end is one notification with its ports and its bytes
 * (its FIN among them). */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "host/diagclose.c"
#include "host/diag.c"
#include "host/pidinfo.c"
#include "unit.h"

/* A notification as the kernel writes one: header, inet_diag_msg, INET_DIAG_INFO of info_len
 * bytes, INET_DIAG_PROTOCOL; its length (aligned) */
static size_t put_msg(unsigned char *b, unsigned sport, unsigned dport, size_t info_len,
                      uint64_t bytes_acked)
{
	struct nl_hdr h = {.type = 20};
	struct diag_msg m;
	memset(&m, 0, sizeof m);
	m.family = AF_INET;
	m.state = 7;
	m.id.sport = htons((uint16_t)sport);
	m.id.dport = htons((uint16_t)dport);
	m.id.src[0] = htonl(0x7f000001);
	m.id.cookie[0] = 77;
	size_t off = sizeof h;
	memcpy(b + off, &m, sizeof m);
	off += NL_ALIGN(sizeof m);
	unsigned char info[320];
	memset(info, 0, sizeof info);
	struct diag_tcp_info ti;
	memset(&ti, 0, sizeof ti);
	ti.snd_mss = 1448, ti.min_rtt = 80000, ti.data_segs_out = 32, ti.bytes_acked = bytes_acked;
	memcpy(info, &ti, sizeof ti < info_len ? sizeof ti : info_len);
	struct nl_attr a = {(uint16_t)(sizeof a + info_len), 2};
	memcpy(b + off, &a, sizeof a);
	memcpy(b + off + sizeof a, info, info_len);
	off += NL_ALIGN(a.len);
	struct nl_attr p = {sizeof p + 1, 8};
	memcpy(b + off, &p, sizeof p);
	b[off + sizeof p] = IPPROTO_TCP;
	off += NL_ALIGN(p.len);
	h.len = (uint32_t)off;
	memcpy(b, &h, sizeof h);
	return NL_ALIGN(off);
}

struct seen {
	int n;
	struct diag_sock last;
};
static void on_sock(const struct diag_sock *s, void *ctx)
{
	struct seen *x = ctx;
	x->n++;
	x->last = *s;
}

static _Alignas(8) unsigned char buf[8192];

static void parse_cases(void)
{
	struct diagclose_count n;
	struct seen x;
	/* one, as this kernel sends it (tcp_info of 280 bytes) */
	memset(&n, 0, sizeof n), memset(&x, 0, sizeof x);
	size_t len = put_msg(buf, 8000, 40000, 280, 46002);
	if (diagclose_parse(buf, len, on_sock, &x, &n) != 1 || x.n != 1 || n.sockets != 1 ||
	    n.malformed || x.last.sport != 8000 || x.last.dport != 40000 || x.last.cookie != 77 ||
	    x.last.info_len != sizeof x.last.ti || x.last.ti.bytes_acked != 46002 ||
	    x.last.ti.min_rtt != 80000 || x.last.state != 7)
		CASE_FAIL("one: given %d, sport %u dport %u cookie %llu info %zu acked %llu", x.n,
		          x.last.sport, x.last.dport, x.last.cookie, x.last.info_len,
		          (unsigned long long)x.last.ti.bytes_acked);
	/* two in a row; an older kernel's shorter tcp_info: what is past it reads 0 */
	memset(&n, 0, sizeof n), memset(&x, 0, sizeof x);
	len = put_msg(buf, 8000, 40001, 280, 1);
	len += put_msg(buf + len, 8001, 40002, 104, 2);
	if (diagclose_parse(buf, len, on_sock, &x, &n) != 2 || x.n != 2 || x.last.sport != 8001 ||
	    x.last.info_len != 104 || x.last.ti.bytes_acked != 0 || x.last.ti.snd_mss != 1448)
		CASE_FAIL("two: given %d, the second's info %zu acked %llu mss %u", x.n,
		          x.last.info_len, (unsigned long long)x.last.ti.bytes_acked, x.last.ti.snd_mss);
	/* a datagram cut in the second message: the first given, the rest malformed */
	memset(&n, 0, sizeof n), memset(&x, 0, sizeof x);
	size_t first = put_msg(buf, 8000, 40001, 280, 1);
	len = first + put_msg(buf + first, 8001, 40002, 280, 2);
	if (diagclose_parse(buf, len - 50, on_sock, &x, &n) != 1 || n.malformed != 1)
		CASE_FAIL("cut: given %d malformed %llu", x.n, n.malformed);
	/* lengths that lie: past the datagram, under a header (0: no endless loop), over the
	 * header but under the body */
	static const uint32_t lies[] = {100000, 0, 8, 16, 16 + 40};
	for (size_t k = 0; k < sizeof lies / sizeof *lies; k++) {
		memset(&n, 0, sizeof n), memset(&x, 0, sizeof x);
		len = put_msg(buf, 8000, 40000, 280, 1);
		memcpy(buf, &lies[k], sizeof lies[k]);
		long got = diagclose_parse(buf, len, on_sock, &x, &n);
		if (got != 0 || x.n || !n.malformed)
			CASE_FAIL("length %u: given %ld, malformed %llu", lies[k], got, n.malformed);
	}
	/* an attribute whose length runs past its message: not read, the socket given without
	 * tcp_info */
	memset(&n, 0, sizeof n), memset(&x, 0, sizeof x);
	len = put_msg(buf, 8000, 40000, 280, 1);
	struct nl_attr big = {4000, 2};
	memcpy(buf + 16 + 72, &big, sizeof big);
	if (diagclose_parse(buf, len, on_sock, &x, &n) != 1 || x.last.info_len != 0 ||
	    x.last.ti.min_rtt != 0)
		CASE_FAIL("attribute past its message: info %zu", x.last.info_len);
	/* another message type (an error, an ack): counted, not a socket */
	memset(&n, 0, sizeof n), memset(&x, 0, sizeof x);
	len = put_msg(buf, 8000, 40000, 280, 1);
	uint16_t t = 2;
	memcpy(buf + 4, &t, sizeof t);
	if (diagclose_parse(buf, len, on_sock, &x, &n) != 0 || x.n || n.malformed != 1)
		CASE_FAIL("type 2: given %d", x.n);
	/* a congestion name of 20 bytes, no NUL: cut to what the field holds */
	struct diag_sock s;
	len = put_msg(buf, 8000, 40000, 0, 0);
	struct {
		struct nl_attr a;
		char name[20];
	} cong = {{24, 4}, "abcdefghijklmnopqrst"};
	memcpy(buf + len, &cong, sizeof cong);
	uint32_t total = (uint32_t)(len + sizeof cong);
	memcpy(buf, &total, sizeof total);
	if (!diag_parse(buf, total, &s) || strcmp(s.cong, "abcdefghijklmno") != 0)
		CASE_FAIL("a name without its NUL: '%s'", s.cong);
	/* random bytes, and random damage to a real message: no crash, nothing read past */
	srand(7);
	for (int r = 0; r < 20000; r++) {
		memset(&n, 0, sizeof n), memset(&x, 0, sizeof x);
		len = put_msg(buf, 8000, 40000, 280, 1);
		if (r % 2) {
			for (size_t k = 0; k < len; k++)
				buf[k] = (unsigned char)rand();
		} else {
			for (int k = 0; k < 4; k++)
				buf[(size_t)rand() % len] = (unsigned char)rand();
		}
		size_t cut = (size_t)rand() % (len + 1);
		diagclose_parse(buf, cut, on_sock, &x, &n);
		if (n.sockets + n.malformed > n.messages + 1 || x.n > 1)
			CASE_FAIL("random %d: %llu sockets %llu malformed of %llu messages", r, n.sockets,
			          n.malformed, n.messages);
	}
	end_group("diagclose_parse");
}

/* A loopback connection of ours, closed: its server end's notification */
struct mine {
	unsigned port;
	int n;
	uint64_t received;
};
static void on_mine(const struct diag_sock *s, void *ctx)
{
	struct mine *m = ctx;
	if (s->sport == m->port && s->dport) {
		m->n++;
		m->received = s->ti.bytes_received;
	}
}

static void live_cases(void)
{
	int rb = 0, fd = diagclose_open(0, &rb);
	if (fd == -EPERM || fd == -EACCES) {
		printf("  (no live case: subscribing takes CAP_NET_ADMIN)\n");
		end_group("diagclose_live");
		return;
	}
	if (fd < 0) {
		CASE_FAIL("diagclose_open: %s", strerror(-fd));
		end_group("diagclose_live");
		return;
	}
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *)&a, &al)) {
		CASE_FAIL("listener: %s", strerror(errno));
		end_group("diagclose_live");
		return;
	}
	struct mine m = {ntohs(a.sin_port), 0, 0};
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
		CASE_FAIL("connect: %s", strerror(errno));
	int s = accept(l, NULL, NULL);
	if (write(c, "hello", 5) != 5)
		CASE_FAIL("write");
	char b[8];
	if (read(s, b, sizeof b) != 5)
		CASE_FAIL("read");
	close(c);
	close(s);
	close(l);
	struct diagclose_count n = {0};
	for (int k = 0; k < 200 && m.n < 1; k++) { /* (the kernel sends from a work item) */
		diagclose_read(fd, 1000, on_mine, &m, &n);
		struct timespec ts = {0, 10 * 1000000};
		nanosleep(&ts, NULL);
	}
	/* (bytes received: the 5 and the client's FIN, which takes a sequence number) */
	if (m.n != 1 || m.received != 6 || rb < 65536)
		CASE_FAIL("its server end: %d notifications, %llu bytes received (want 1, 6); "
		          "buffer %d", m.n, (unsigned long long)m.received, rb);
	close(fd);
	end_group("diagclose_live");
}

int main(void)
{
	parse_cases();
	live_cases();
	return failures != 0;
}
