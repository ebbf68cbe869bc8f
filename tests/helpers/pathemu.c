/* pathemu: a network path with delay, loss and a bottleneck between two network namespaces,
 * for the tests and the benchmark.  Loopback has a 65,536-byte MTU and a round trip of a few
 * microseconds, so slow start, loss recovery and a bottleneck's queue never show there, and
 * this kernel has no sch_netem to add them.
 *
 *   pathemu [--name NAME] [--mtu N] [--seconds S] [--seed N] [--no-rt]
 *           [--a2b | --b2a | --both] [--delay T] [--jitter T] [--loss P%] [--burst P%,LEN]
 *           [--rate R] [--queue N] ...
 *
 * It makes two network namespaces, pe-NAME-PID-a and pe-NAME-PID-b, named as `ip netns add`
 * names them (enter with `ip netns exec NS` or `nsenter --net=/run/netns/NS`), each with lo up
 * and a TUN device (pe-a, pe-b: IFF_TUN|IFF_NO_PI, MTU 1500 unless --mtu, no offload, so a
 * TCP segment is as large as on a real 1500-byte link: MSS 1448 on IPv4, 1428 on IPv6):
 *   end a: 198.18.0.1/24  fd00:5e:0:a::1/64      end b: 198.18.1.1/24  fd00:5e:0:b::1/64
 * each routing the other's prefixes through its device (198.18.0.0/15 is the benchmarking
 * range, fd00::/8 unique local: nothing outside the two namespaces is touched).  One process
 * forwards every packet between the two devices, after the path's effects, per direction.
 *
 * The path options apply to the direction(s) named last: --a2b, --b2a or --both (the
 * default), so `--a2b --delay 30ms --b2a --delay 50ms` is an 80 ms round trip.
 *   --delay T       one-way delay (T: 30ms, 500us, 0.2s; a bare number is ms)
 *   --jitter T      a random extra delay per packet, uniform in [0, T]; packets never
 *                   reorder (none leaves before the one ahead of it), so the delay is never
 *                   under --delay: a connection's minimum RTT is the sum of the two delays.
 *                   (Packets closer together than T wait for the latest ahead of them: at
 *                   10,000 a second and T = 10 ms, most take nearly the whole T.)
 *   --loss P%       each packet lost with probability P (independently)
 *   --burst P%,LEN  losses in bursts (Gilbert-Elliott: a good state passes every packet, a
 *                   bad one loses every packet): P% lost in all, in runs of LEN packets on
 *                   average; runs and the gaps between them are geometric, a gap's mean
 *                   LEN (100 - P) / P
 *   --rate R        a bottleneck of R ahead of the delay (20mbit, 500kbit, 1gbit; bits of IP
 *                   packets per second; a bare number is bit/s): a packet takes len * 8 / R
 *                   to go through it, one at a time
 *   --queue N       the bottleneck's FIFO holds N packets (default 1000; the one going
 *                   through counts), or N bytes with a b, kb or mb suffix (1000s); a packet
 *                   arriving to a full one is dropped.  At most 20000 packets or 4mb.
 *                   A full queue adds N packets' serialization to the one-way delay: what
 *                   bufferbloat is (200 packets of 1500 bytes at 20mbit: 120 ms)
 *   --seconds S     ends by itself after S s (default: when signalled)
 *   --seed N        the random draws' seed (default: from the clock; printed either way)
 *   --no-rt         not at real-time priority.  By default it runs SCHED_FIFO (priority
 *                   1, where allowed; READY says rt=1): its timing is its purpose.  Beside
 *                   two busy loops on a 2-CPU machine at load 16, its packets left 9 ms
 *                   late on average (40 ms at worst) without it, and a connection's minimum
 *                   RTT over 12 round trips read up to 86.2 ms for 80; with it, 75 us late
 *                   (0.5 ms at worst) and 80.22 to 80.27 ms.  It takes the CPU that the
 *                   traffic through it costs, no more: that traffic's senders run here too
 *
 * Output on stdout, key=value lines (tests/lib.sh's field reads them):
 *   PATH dir=a2b delay_us= jitter_us= loss= burst= burst_len= rate= queue= queue_unit=
 *   READY a=NS b=NS cleaner=PID seed=N mtu=N rt=0|1 a4= b4= a6= b6=   once both ends are up
 *   STATS dir=a2b in= in_bytes= out= out_bytes= lost= burst_lost= queue_drops= ring_drops=
 *         oversize= write_errors= max_len= max_queue= queued= late_mean_us= late_max_us=
 *         on SIGUSR1 and at the end (lost: --loss, burst_lost: --burst, oversize: packets
 *         over the MTU, max_queue: the bottleneck's fullest, late: after their time)
 *   END reason=signal|seconds
 * It ends on SIGTERM, SIGINT or SIGHUP (or --seconds) and removes both namespaces.  A
 * cleaner process (pathemu-clean, pid in READY) removes them too when the emulator ends
 * any other way, SIGKILL included.  A namespace is gone from `ip netns list` then, though a
 * process still in it keeps it alive.  Needs root and /dev/net/tun; exit status 1 (the
 * reason on stderr) when it cannot set up, 2 for a bad command line.
 *
 * Timing: CLOCK_MONOTONIC, with 1 ns timer slack; a packet leaves at the first wakeup at or
 * after its time, never before.  A late wakeup (a loaded machine) only adds delay: a
 * connection's smoothed RTT stretches then, its minimum stays the asked one.  The
 * bottleneck keeps its own clock (a packet goes through when the one ahead has, not when
 * the emulator wakes), so its rate holds however late the wakeups.  Each device queues
 * 10,000 packets for the emulator to read: a stall of the emulator is a delay, not a loss.
 * tests/t_pathemu.sh checks its accuracy; docs/benchmarks.md says how to use it. */
#include <stdint.h>

#include "common.h"
#include "pathemu_args.h"
#include "pathemu_ns.h"

/* One packet on its way: when it leaves the bottleneck (done) and the path (due). */
struct slot {
	uint64_t due, done;
	uint32_t len;
};

struct dir {
	const char *name;
	int in, out; /* the TUN device it reads (what one end sends), the one it writes */
	struct pe_path p;
	int bad; /* Gilbert-Elliott: in the bad state now */
	/* packets on their way, a ring: sequence numbers [head, tail), oldest first */
	struct slot *slot;
	unsigned char *data;
	size_t slot_size;
	uint64_t cap, head, tail, last_due;
	/* the bottleneck: the packets [qfirst, tail) not through it yet */
	uint64_t qfirst, qpkts, qsize, link_free, link_rem;
	/* counts */
	uint64_t in_pkts, in_bytes, out_pkts, out_bytes, lost, burst_lost, queue_drops, ring_drops,
	    oversize, write_errors, max_len, max_queue;
	uint64_t late_sum, late_max; /* how long after its time each packet left (ns) */
};

static volatile sig_atomic_t stop_sig, want_stats;
static void on_stop(int sig)
{
	stop_sig = sig;
}
static void on_usr1(int sig)
{
	(void)sig;
	want_stats = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: small, fast, and reproducible from the seed printed in READY */
static uint64_t rng;
static double rnd01(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1.0p-53;
}

/* ---- the path ---- */

/* The bottleneck at time t: the packets through it by then no longer count. */
static void bottleneck_drain(struct dir *d, uint64_t t)
{
	while (d->qfirst < d->tail) {
		struct slot *s = &d->slot[d->qfirst % d->cap];
		if (s->done > t)
			break;
		d->qpkts--;
		d->qsize -= s->len;
		d->qfirst++;
	}
}

/* A packet of len bytes, read at t into the ring's slot at tail: lost, dropped, or given the
 * time it leaves. */
static void arrive(struct dir *d, uint32_t len, uint64_t t)
{
	if (d->p.to_good > 0) { /* (the state moves on with every packet, lost or not) */
		d->bad = d->bad ? rnd01() >= d->p.to_good : rnd01() < d->p.to_bad;
		if (d->bad) {
			d->burst_lost++;
			return;
		}
	}
	if (d->p.loss > 0 && rnd01() < d->p.loss) {
		d->lost++;
		return;
	}
	uint64_t done = t;
	if (d->p.rate) {
		bottleneck_drain(d, t);
		if (d->p.qbytes ? d->qsize + len > d->p.qlimit : d->qpkts + 1 > d->p.qlimit) {
			d->queue_drops++; /* tail drop */
			return;
		}
		/* one packet at a time at the link's rate, from when the one ahead has gone
		 * through (or now, on an idle link); the remainder carried so that the rate
		 * holds over many packets */
		uint64_t start = d->link_free > t ? d->link_free : t;
		uint64_t bit_ns = (uint64_t)len * 8 * 1000000000ull + (start == t ? 0 : d->link_rem);
		done = start + bit_ns / d->p.rate;
		d->link_rem = bit_ns % d->p.rate;
		d->link_free = done;
		d->qpkts++;
		d->qsize += len;
		if (d->qpkts > d->max_queue)
			d->max_queue = d->qpkts;
	}
	uint64_t due = done + d->p.delay;
	if (d->p.jitter)
		due += (uint64_t)(rnd01() * (double)d->p.jitter);
	if (due < d->last_due)
		due = d->last_due; /* no reordering */
	d->last_due = due;
	struct slot *s = &d->slot[d->tail % d->cap];
	s->due = due;
	s->done = done;
	s->len = len;
	d->tail++;
}

/* What the device has, read (at most a batch, so that the other direction and the packets
 * due are not kept waiting). */
static void take(struct dir *d, unsigned char *scratch)
{
	for (int i = 0; i < 64; i++) {
		int full = d->tail - d->head == d->cap;
		unsigned char *buf = full ? scratch : d->data + (d->tail % d->cap) * d->slot_size;
		ssize_t n = read(d->in, buf, d->slot_size);
		if (n <= 0)
			return; /* EAGAIN: nothing more now */
		uint64_t t = now_ns();
		d->in_pkts++;
		d->in_bytes += (uint64_t)n;
		if ((uint64_t)n > d->max_len)
			d->max_len = (uint64_t)n;
		if ((size_t)n == d->slot_size) /* over the MTU (cut short: not passed on) */
			d->oversize++;
		else if (full)
			d->ring_drops++;
		else
			arrive(d, (uint32_t)n, t);
	}
}

/* Every packet due by now passed to the other end. */
static void depart(struct dir *d, uint64_t now)
{
	while (d->head < d->tail) {
		struct slot *s = &d->slot[d->head % d->cap];
		if (s->due > now)
			break;
		ssize_t w = write(d->out, d->data + (d->head % d->cap) * d->slot_size, s->len);
		if (w == (ssize_t)s->len) {
			d->out_pkts++;
			d->out_bytes += s->len;
			d->late_sum += now - s->due;
			if (now - s->due > d->late_max)
				d->late_max = now - s->due;
		} else {
			d->write_errors++;
		}
		if (d->p.rate && d->qfirst == d->head) { /* (through the bottleneck too, then) */
			d->qpkts--;
			d->qsize -= s->len;
			d->qfirst++;
		}
		d->head++;
	}
}

static void print_path(const struct dir *d)
{
	printf("PATH dir=%s delay_us=%.3f jitter_us=%.3f loss=%g burst=%g burst_len=%g rate=%llu "
	       "queue=%llu queue_unit=%s\n",
	       d->name, (double)d->p.delay / 1e3, (double)d->p.jitter / 1e3, d->p.loss, d->p.burst,
	       d->p.burst_len, (unsigned long long)d->p.rate,
	       (unsigned long long)(d->p.rate ? d->p.qlimit : 0), d->p.qbytes ? "bytes" : "packets");
}

static void print_stats(const struct dir *d)
{
	printf("STATS dir=%s in=%llu in_bytes=%llu out=%llu out_bytes=%llu lost=%llu burst_lost=%llu "
	       "queue_drops=%llu ring_drops=%llu oversize=%llu write_errors=%llu max_len=%llu "
	       "max_queue=%llu queued=%llu late_mean_us=%.1f late_max_us=%.1f\n",
	       d->name, (unsigned long long)d->in_pkts, (unsigned long long)d->in_bytes,
	       (unsigned long long)d->out_pkts, (unsigned long long)d->out_bytes,
	       (unsigned long long)d->lost, (unsigned long long)d->burst_lost,
	       (unsigned long long)d->queue_drops, (unsigned long long)d->ring_drops,
	       (unsigned long long)d->oversize, (unsigned long long)d->write_errors,
	       (unsigned long long)d->max_len, (unsigned long long)d->max_queue,
	       (unsigned long long)(d->tail - d->head),
	       d->out_pkts ? (double)d->late_sum / (double)d->out_pkts / 1e3 : 0.0,
	       (double)d->late_max / 1e3);
	fflush(stdout);
}

/* The ring sized for what may be on the way: 32 MiB of slots, more for a long queue. */
static void dir_alloc(struct dir *d, int mtu)
{
	d->slot_size = (size_t)mtu + 1; /* (a read that fills it was over the MTU) */
	d->cap = (32u << 20) / d->slot_size;
	uint64_t q = d->p.qbytes ? d->p.qlimit / 64 : d->p.qlimit;
	if (d->p.rate && d->cap < q + 256)
		d->cap = q + 256;
	if (d->cap < 1024)
		d->cap = 1024;
	d->slot = calloc(d->cap, sizeof *d->slot);
	d->data = malloc(d->cap * d->slot_size);
	if (!d->slot || !d->data)
		die("no memory for %llu packets", (unsigned long long)d->cap);
}

/* Forward until a signal or the end; the reason. */
static const char *forward(struct dir *dirs, uint64_t end, const sigset_t *unblocked, int mtu)
{
	unsigned char *scratch = malloc((size_t)mtu + 1);
	if (!scratch)
		die("no memory");
	for (;;) {
		uint64_t now = now_ns();
		depart(&dirs[0], now);
		depart(&dirs[1], now);
		if (want_stats) {
			want_stats = 0;
			print_stats(&dirs[0]);
			print_stats(&dirs[1]);
		}
		if (stop_sig)
			return "signal";
		if (end && now >= end)
			return "seconds";
		uint64_t next = end ? end : UINT64_MAX;
		for (int i = 0; i < 2; i++)
			if (dirs[i].head < dirs[i].tail && dirs[i].slot[dirs[i].head % dirs[i].cap].due < next)
				next = dirs[i].slot[dirs[i].head % dirs[i].cap].due;
		struct timespec ts, *tp = NULL;
		if (next != UINT64_MAX) {
			now = now_ns();
			uint64_t wait = next > now ? next - now : 0;
			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			tp = &ts;
		}
		struct pollfd p[2] = {{.fd = dirs[0].in, .events = POLLIN},
		                      {.fd = dirs[1].in, .events = POLLIN}};
		int r = ppoll(p, 2, tp, unblocked);
		if (r < 0 && errno != EINTR)
			die("ppoll: %s", strerror(errno));
		for (int i = 0; r > 0 && i < 2; i++) {
			if (p[i].revents & (POLLERR | POLLHUP | POLLNVAL))
				die("the TUN device of %s failed (revents %#x)", dirs[i].name, p[i].revents);
			if (p[i].revents & POLLIN)
				take(&dirs[i], scratch);
		}
	}
}

int main(int argc, char **argv)
{
	prog_name = "pathemu";
	struct dir dirs[2] = {{.name = "a2b"}, {.name = "b2a"}};
	struct pe_opts opt = {.name = "emu", .mtu = 1500, .rt = 1,
	                      .seed = now_ns() ^ ((uint64_t)getpid() << 32),
	                      .path = {{.qlimit = 1000}, {.qlimit = 1000}}};
	if (pe_args(argc, argv, &opt) != 0) {
		fprintf(stderr, "usage: pathemu [--name NAME] [--mtu N] [--seconds S] [--seed N] [--no-rt]\n"
		                "         [--a2b|--b2a|--both] [--delay T] [--jitter T] [--loss P%%]\n"
		                "         [--burst P%%,LEN] [--rate R] [--queue N[b|kb|mb]] ...\n"
		                "(the header of tests/helpers/pathemu.c says what each does)\n");
		return 2;
	}
	for (int i = 0; i < 2; i++)
		dirs[i].p = opt.path[i];
	int mtu = opt.mtu;
	rng = opt.seed;
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* SIGTERM and the like only between two rounds of the loop (in ppoll), so that the
	 * namespaces are removed whenever one comes, setup included */
	sigset_t block, unblocked;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &unblocked);
	struct sigaction sa = {.sa_handler = on_stop};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* the one that started it gone (a bench or a test killed): ended as by SIGTERM, so that
	 * no emulator outlives it with its --seconds (the cleaner still removes the namespaces) */
	pid_t starter = getppid();
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != starter)
		raise(SIGTERM);
	/* a wakeup as close to a packet's time as the kernel can make it */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	struct sched_param sp = {.sched_priority = 1};
	if (opt.rt && sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) != 0) {
		fprintf(stderr, "pathemu: no real-time priority (SCHED_FIFO: %s): its wakeups may "
		                "be late on a loaded machine\n", strerror(errno));
		opt.rt = 0;
	}

	struct pe_end ends[2] = {
	    {.dev = "pe-a", .addr4 = "198.18.0.1", .peer4 = "198.18.1.0",
	     .addr6 = "fd00:5e:0:a::1", .peer6 = "fd00:5e:0:b::", .fd = -1},
	    {.dev = "pe-b", .addr4 = "198.18.1.1", .peer4 = "198.18.0.0",
	     .addr6 = "fd00:5e:0:b::1", .peer6 = "fd00:5e:0:a::", .fd = -1}};
	snprintf(ends[0].ns, sizeof ends[0].ns, "pe-%s-%d-a", opt.name, (int)getpid());
	snprintf(ends[1].ns, sizeof ends[1].ns, "pe-%s-%d-b", opt.name, (int)getpid());

	int hold = -1;
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0)
		die("open /proc/self/ns/net: %s", strerror(errno));
	pid_t cleaner = pe_cleaner(ends[0].ns, ends[1].ns, &hold);
	int ok = cleaner > 0 && pe_netns_dir() == 0;
	for (int i = 0; ok && i < 2; i++)
		ok = pe_ns_enter_new(ends[i].ns) == 0 && pe_end_setup(&ends[i], mtu) == 0;
	if (setns(home, CLONE_NEWNET) != 0 && ok) {
		pe_fail("setns back to the first namespace");
		ok = 0;
	}
	close(home);
	if (!ok) {
		fprintf(stderr, "pathemu: %s\n", pe_err);
		pe_finish(ends[0].ns, ends[1].ns, cleaner, hold);
		return 1;
	}
	dirs[0].in = dirs[1].out = ends[0].fd;
	dirs[1].in = dirs[0].out = ends[1].fd;
	for (int i = 0; i < 2; i++) {
		dir_alloc(&dirs[i], mtu);
		print_path(&dirs[i]);
	}
	printf("READY a=%s b=%s cleaner=%d seed=%llu mtu=%d rt=%d a4=%s b4=%s a6=%s b6=%s\n", ends[0].ns,
	       ends[1].ns, (int)cleaner, (unsigned long long)opt.seed, mtu, opt.rt, ends[0].addr4, ends[1].addr4,
	       mtu >= 1280 ? ends[0].addr6 : "none", mtu >= 1280 ? ends[1].addr6 : "none");
	fflush(stdout);

	uint64_t end = opt.seconds ? now_ns() + (uint64_t)opt.seconds * 1000000000u : 0;
	const char *why = forward(dirs, end, &unblocked, mtu);
	print_stats(&dirs[0]);
	print_stats(&dirs[1]);
	printf("END reason=%s\n", why);
	fflush(stdout);
	close(ends[0].fd);
	close(ends[1].fd);
	if (pe_finish(ends[0].ns, ends[1].ns, cleaner, hold) != 0) {
		fprintf(stderr, "pathemu: %s\n", pe_err);
		return 1;
	}
	return 0;
}
