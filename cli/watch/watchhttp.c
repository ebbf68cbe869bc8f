/* GET /metrics for --listen: a small HTTP/1.x server inside watch's one poll loop, so it
 * can never hold up a sample.  Every socket is non-blocking; a client has REQUEST_S to send
 * its request head (at most REQUEST_MAX bytes: past that, 431) and WRITE_S to take the
 * answer, then what it still sends is read until it closes (REQUEST_S more at most); at
 * most WATCH_HTTP_CLIENTS at once, and a new one takes the place of the oldest not taking
 * an answer (a client that connects and says nothing, or sends a header a byte a second,
 * is the first to go).  One request per connection
 * (Connection: close); other paths 404, other methods 405. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "watch/watch.h"

#define REQUEST_MAX 4096
#define REQUEST_S 3.0
#define WRITE_S 10.0

static struct client {
	int fd;        /* -1: a free slot */
	int writing;   /* 1: the answer goes out; 2: sent, what the client still sends is read
	                * and dropped until it closes (closing on unread data would reset the
	                * connection, and the client could lose the answer: a 431 to a header
	                * still coming) */
	double since;  /* accepted (reading), answer ready (writing), answer sent (draining) */
	size_t got;
	char req[REQUEST_MAX];
	char *out;
	size_t len, off;
	int pf;        /* its index in the pollfds, -1 none */
} clients[WATCH_HTTP_CLIENTS];
static int clients_ready;

static void drop(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	c->out = NULL;
	c->fd = -1;
	c->pf = -1;
}

static void init_clients(void)
{
	if (clients_ready)
		return;
	for (int k = 0; k < WATCH_HTTP_CLIENTS; k++) {
		clients[k].fd = -1;
		clients[k].pf = -1;
		clients[k].out = NULL;
	}
	clients_ready = 1;
}

int watch_http_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64] = "127.0.0.1";
	const char *port = spec, *colon = strrchr(spec, ':');
	if (colon) {
		size_t n = (size_t)(colon - spec);
		if (n >= 2 && spec[0] == '[' && spec[n - 1] == ']') {
			spec++;
			n -= 2;
		}
		if (n >= sizeof host)
			return -1;
		if (n) {
			memcpy(host, spec, n);
			host[n] = '\0';
		}
		port = colon + 1;
	}
	char *end;
	long p = strtol(port, &end, 10);
	if (end == port || *end || p < 1 || p > 65535)
		return -1;
	memset(ss, 0, sizeof *ss);
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)p);
		*len = sizeof *a4;
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)p);
		*len = sizeof *a6;
	} else {
		return -1;
	}
	return 0;
}

int watch_http_open(const char *spec, char *err, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len;
	init_clients();
	if (watch_http_parse(spec, &ss, &len) != 0) {
		snprintf(err, n, "not an address and port (PORT, ADDR:PORT, [ADDR6]:PORT)");
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0) {
		snprintf(err, n, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 64) != 0) {
		snprintf(err, n, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void watch_http_close(int lfd)
{
	for (int k = 0; clients_ready && k < WATCH_HTTP_CLIENTS; k++)
		if (clients[k].fd >= 0)
			drop(&clients[k]);
	if (lfd >= 0)
		close(lfd);
}

static double deadline_of(const struct client *c)
{
	return c->since + (c->writing == 1 ? WRITE_S : REQUEST_S);
}

double watch_http_deadline(double now)
{
	double d = now + 3600;
	for (int k = 0; k < WATCH_HTTP_CLIENTS; k++)
		if (clients[k].fd >= 0 && deadline_of(&clients[k]) < d)
			d = deadline_of(&clients[k]);
	return d;
}

int watch_http_fds(int lfd, struct pollfd *pf, double now)
{
	(void)now;
	int n = 0;
	pf[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
	for (int k = 0; k < WATCH_HTTP_CLIENTS; k++) {
		struct client *c = &clients[k];
		c->pf = -1;
		if (c->fd < 0)
			continue;
		c->pf = n;
		pf[n++] = (struct pollfd){.fd = c->fd, .events = c->writing == 1 ? POLLOUT : POLLIN};
	}
	return n;
}

/* The answer: status line, headers, body (body NULL: a one-line text of the status) */
static void answer(struct client *c, const char *status, const char *body, size_t blen, int head,
                   double now)
{
	char hdr[256];
	if (!body) {
		body = status;
		blen = strlen(status);
	}
	int h = snprintf(hdr, sizeof hdr, "HTTP/1.1 %s\r\nContent-Type: text/plain; version=0.0.4; "
	                 "charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
	                 status, blen + (body == status));
	size_t total = (size_t)h + (head ? 0 : blen + (body == status));
	c->out = malloc(total);
	if (!c->out) {
		drop(c);
		return;
	}
	memcpy(c->out, hdr, (size_t)h);
	if (!head) {
		memcpy(c->out + h, body, blen);
		if (body == status)
			c->out[h + blen] = '\n';
	}
	c->len = total;
	c->off = 0;
	c->writing = 1;
	c->since = now;
}

/* The request head is complete: what it asks */
static void respond(struct client *c, struct watch *w, double now)
{
	char *sp = memchr(c->req, ' ', c->got);
	char *target = sp ? sp + 1 : NULL;
	char *sp2 = target ? memchr(target, ' ', c->got - (size_t)(target - c->req)) : NULL;
	if (!sp || !sp2) {
		answer(c, "400 Bad Request", NULL, 0, 0, now);
		return;
	}
	size_t mlen = (size_t)(sp - c->req), tlen = strcspn(target, "? \r\n");
	int get = mlen == 3 && memcmp(c->req, "GET", 3) == 0;
	int head = mlen == 4 && memcmp(c->req, "HEAD", 4) == 0;
	if (!get && !head) {
		answer(c, "405 Method Not Allowed", NULL, 0, 0, now);
		return;
	}
	if (tlen != 8 || memcmp(target, "/metrics", 8) != 0) {
		answer(c, "404 Not Found", NULL, 0, head, now);
		return;
	}
	size_t len;
	char *text = watch_prometheus(w, WATCH_SCRAPE, &len);
	if (!text) {
		answer(c, "500 Internal Server Error", NULL, 0, head, now);
		return;
	}
	answer(c, "200 OK", text, len, head, now);
	free(text);
}

static void on_write(struct client *c, double now)
{
	ssize_t s = send(c->fd, c->out + c->off, c->len - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (s < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (s <= 0) {
		drop(c);
		return;
	}
	c->off += (size_t)s;
	if (c->off < c->len)
		return;
	free(c->out);
	c->out = NULL;
	shutdown(c->fd, SHUT_WR);
	c->writing = 2;
	c->since = now;
}

static void on_drain(struct client *c)
{
	char scratch[4096];
	ssize_t r = recv(c->fd, scratch, sizeof scratch, 0);
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
		drop(c);
}

static void on_read(struct client *c, struct watch *w, double now)
{
	ssize_t r = recv(c->fd, c->req + c->got, sizeof c->req - c->got - 1, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		drop(c);
		return;
	}
	c->got += (size_t)r;
	c->req[c->got] = '\0';
	if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
		respond(c, w, now);
		if (c->fd >= 0)
			on_write(c, now); /* (most answers fit the socket's buffer: done at once) */
	} else if (c->got >= sizeof c->req - 1)
		answer(c, "431 Request Header Fields Too Large", NULL, 0, 0, now);
}

/* A slot for a new client: a free one, else the oldest still sending its request */
static struct client *slot(void)
{
	struct client *oldest = NULL;
	for (int k = 0; k < WATCH_HTTP_CLIENTS; k++) {
		struct client *c = &clients[k];
		if (c->fd < 0)
			return c;
		if (c->writing != 1 && (!oldest || c->since < oldest->since))
			oldest = c;
	}
	if (oldest)
		drop(oldest);
	return oldest;
}

void watch_http_run(int lfd, const struct pollfd *pf, int n, double now, struct watch *w)
{
	for (int k = 0; k < WATCH_HTTP_CLIENTS; k++) {
		struct client *c = &clients[k];
		if (c->fd < 0)
			continue;
		if (c->pf >= 0 && c->pf < n && pf[c->pf].revents) {
			if (c->writing == 1)
				on_write(c, now);
			else if (c->writing == 2)
				on_drain(c);
			else
				on_read(c, w, now);
		}
		if (c->fd >= 0 && now >= deadline_of(c))
			drop(c);
	}
	if (n < 1 || !(pf[0].revents & POLLIN))
		return;
	for (int k = 0; k < WATCH_HTTP_CLIENTS; k++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct client *c = slot();
		if (!c) { /* every slot is taking an answer: this one waits for none */
			close(fd);
			continue;
		}
		c->fd = fd;
		c->writing = 0;
		c->since = now;
		c->got = 0;
		c->pf = -1;
	}
}
