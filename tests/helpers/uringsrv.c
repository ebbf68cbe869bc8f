/* uringsrv: accepts N connections on an inherited listening socket through io_uring
 * (IORING_OP_ACCEPT, raw system calls, no liburing), so no accept() of libc ever runs: what
 * a preloaded library can do for it happens at start or not at all.  For each connection it
 * prints what the kernel says about it and the listener, then closes it.
 *
 *   uringsrv FD N [SECONDS]
 *   prints: LISTENER backlog=... nodelay=...   (before the first accept)
 *           CONN i=0 nodelay=... rcvbuf=... backlog=...
 *           DONE conns=N
 */
#include "common.h"

#if !__has_include(<linux/io_uring.h>) /* musl-gcc has no kernel headers */
int main(void)
{
	fprintf(stderr, "uringsrv: io_uring_setup: no <linux/io_uring.h> in this build\n");
	return 2;
}
#else
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>

struct ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static void ring_setup(struct ring *r)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	r->fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	if (r->fd < 0)
		die("io_uring_setup: %s", strerror(errno));
	size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
	                IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
	                IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED)
		die("mmap ring: %s", strerror(errno));
	r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p.sq_off.array);
	r->cq_head = (unsigned *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

/* One accept through the ring; the new descriptor or -errno. */
static int ring_accept(struct ring *r, int lfd)
{
	unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	memset(sqe, 0, sizeof *sqe);
	sqe->opcode = IORING_OP_ACCEPT;
	sqe->fd = lfd;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(SYS_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		die("io_uring_enter: %s", strerror(errno));
	unsigned head = *r->cq_head;
	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		die("no completion");
	int res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

int main(int argc, char **argv)
{
	prog_name = "uringsrv";
	if (argc < 3)
		die("usage: uringsrv FD N [SECONDS]");
	int lfd = (int)num_arg("FD", argv[1], 0, 1 << 20);
	int n = (int)num_arg("N", argv[2], 1, 1000);
	alarm(argc > 3 ? (unsigned)num_arg("SECONDS", argv[3], 1, 600) : 20);
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct ring r;
	ring_setup(&r);
	printf("LISTENER backlog=%ld nodelay=%d\n", listen_backlog(lfd), sockopt_int(lfd, IPPROTO_TCP, TCP_NODELAY));
	for (int i = 0; i < n; i++) {
		int cfd = ring_accept(&r, lfd);
		if (cfd < 0)
			die("accept: %s", strerror(-cfd));
		printf("CONN i=%d nodelay=%d rcvbuf=%d backlog=%ld\n", i, sockopt_int(cfd, IPPROTO_TCP, TCP_NODELAY),
		       sockopt_int(cfd, SOL_SOCKET, SO_RCVBUF), listen_backlog(lfd));
		close(cfd);
	}
	printf("DONE conns=%d\n", n);
	return 0;
}
#endif
