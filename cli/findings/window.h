/* The record of a window that doctor's rules judge: the namespaces' counters at both ends,
 * each listener's numbers and holders, each connection's first and last sample.  Doctor fills
 * it from its own samples (cli/doctor/), watch from its listener samples (cli/watch/); the
 * rules (findings.h) read it.  What fills it is no concern of this header, so neither
 * subcommand needs the other's.  Internal to cli/. */
#ifndef SOCKTUNE_WINDOW_H
#define SOCKTUNE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "socktune_kernel.h"
#include "record.h"
#include "host/diag.h"

/* How a running process would be started again (doctor's startcmd.c reads it; a fix that
 * restarts the service prints it) */
struct doc_start {
	int known;         /* argv, run from dir, starts the program as it was started */
	unsigned reach;    /* inspect_program's P_* flags of its program: LD_PRELOAD misses it */
	long uid;          /* the user it runs as (/proc/PID's owner), -1 unknown */
	char dir[1024];    /* its working directory, one shell word */
	char env[1024];    /* its SOCKTUNE_* variables as shell words, each followed by a space
	                    * (a server started under socktune keeps its settings) */
	char argv[2048];   /* the program and its arguments, shell words */
	char why[400];     /* !known: why no command can be given */
};

#define DOC_MAX_NS 16
#define DOC_MAX_LISTENERS 256
#define DOC_MAX_OWNERS 32

/* The counters of a network namespace, at the start and the end of the window */
enum { C_LISTEN_OVERFLOWS, C_LISTEN_DROPS, C_SYN_RETRANS, C_RETRANS_SEGS, C_TIMEOUTS,
       C_RCVQ_DROP, C_PRUNE, C_COUNT };

struct doc_ns {
	unsigned long long ino; /* of /proc/PID/ns/net */
	int pid;                /* one process in it (0: ours) */
	int nl;                 /* its sock_diag socket, -1 when not reachable */
	int ours;
	long long start[C_COUNT], end[C_COUNT]; /* -1: unreadable */
	long long somaxconn, rmem_max, wmem_max, tcp_mem[3], rmem[3], wmem[3];
	char cong[16];          /* its net.ipv4.tcp_congestion_control ("" unknown) */
	char cong_available[256]; /* net.ipv4.tcp_available_congestion_control (the host's) */
	/* its destroy notifications (host/diagclose.c): followed (-errno: not), and the
	 * times the kernel dropped some (ENOBUFS) over the window */
	int closes;
	unsigned long long close_overruns;
	char error[160];
	char name[256]; /* its name under /run/netns (ip netns), one shell word; "" none */
};

/* counter k's change over the window, -1 when it was unreadable at either end */
static inline long long doc_ns_delta(const struct doc_ns *ns, int k)
{
	return ns->start[k] >= 0 && ns->end[k] >= 0 ? ns->end[k] - ns->start[k] : -1;
}

struct doc_owner {
	int pid, fd;
	char comm[32];
};

/* ---- a listener's connections as the kernel freed them (closed.c): what the path rules
 * (slow start, loss, findings_path.c) read, from sock_diag's destroy notifications
 * (host/diagclose.c), so that a connection of 50 ms counts as one of 50 s does ---- */

#define DOC_FAR_RTT_US 10000 /* a round trip that matters: the path rules look past it */
#define DOC_GONE_KEEP 32     /* far connections of one response kept (the latest) */
#define DOC_NETS_KEEP 4      /* far and near peers' networks (/24, /64) kept */
#define DOC_NO_RTT UINT32_MAX /* tcpi_min_rtt before any round trip was measured */

/* One connection freed: its tcp_info's end, as the slow-start rule reads it */
struct doc_gone {
	int family;
	unsigned char peer[16];
	uint32_t min_rtt;      /* us */
	uint32_t segs_out;     /* data segments sent (tcpi_data_segs_out), retransmits too */
	uint32_t segs_in;      /* data segments received */
	uint32_t retrans;      /* segments sent again (tcpi_total_retrans) */
	uint32_t mss;
	uint64_t bytes_sent;   /* bytes sent once (tcpi_bytes_sent less tcpi_bytes_retrans) */
	uint64_t busy_us;      /* time with data in flight or queued (tcpi_busy_time) */
	uint64_t rwnd_us;      /* ... of it held by the peer's window (tcpi_rwnd_limited) */
};

/* A network of peers: a /24 of IPv4, a /64 of IPv6 */
struct doc_net {
	int family;
	unsigned char addr[16];
};

struct doc_closed {
	unsigned long long n;          /* connections freed */
	unsigned long long far, near;  /* ... with a min_rtt of DOC_FAR_RTT_US or more, less */
	/* far ones: data segments sent, sent again; those that sent again; of those, the ones
	 * whose slow-start threshold the loss cut (what a loss-based congestion control does:
	 * cubic, reno; bbr leaves it) */
	unsigned long long far_segs, far_retrans, far_lossy, far_cut;
	uint32_t far_min_rtt;          /* the least min_rtt among the far ones (0: none) */
	int far_family;                /* the latest far peer (its route: the initial window's) */
	unsigned char far_peer[16];
	/* far connections that carried one response (at most DOC_ONE_REQUEST_SEGS segments
	 * received: one request, or none), none sent again: the latest DOC_GONE_KEEP */
	struct doc_gone one[DOC_GONE_KEEP];
	int none, next;
	unsigned long long one_seen;
	/* the peers' networks, far and near, the first DOC_NETS_KEEP of each (more: counted) */
	struct doc_net far_nets[DOC_NETS_KEEP], near_nets[DOC_NETS_KEEP];
	int nfar_nets, nnear_nets, far_nets_more;
};
#define DOC_ONE_REQUEST_SEGS 4

/* closed.c: a freed connection s (a listener's: its local port the listener's, a peer) into
 * a; pure.  One without a peer (a listener, a socket never connected) is not counted. */
void doc_closed_add(struct doc_closed *a, const struct diag_sock *s);
/* The flights slow start needs for segs at an initial window of iw segments: the rounds
 * in which it sends iw, 2 iw, 4 iw ... (1 when they fit in the first); pure */
int doc_flights(uint32_t segs, uint32_t iw);
/* Whether address a (family) is in net n */
int doc_net_has(const struct doc_net *n, int family, const unsigned char *a);

struct doc_listener {
	int ns; /* index into shared_window.ns */
	int family;
	unsigned port;
	unsigned char addr[16];
	unsigned long long inode;
	unsigned backlog, queue_now, queue_peak;
	int queued_samples;        /* samples that saw a connection waiting in its queue */
	long long asked;           /* the backlog the application asked, -1 unknown */
	uint32_t rb, tb;
	/* connection attempts it dropped (its sk_drops: the kernel counts each ListenDrops on
	 * the listener too), at the first and the last sample */
	uint32_t drops_first, drops_last;
	int mem_samples;           /* samples that carried them: 2 or more, the drops are known */
	int nodelay;               /* 1, 0, -1 not looked at, -2 could not look */
	char nodelay_why[96];
	struct doc_owner owners[DOC_MAX_OWNERS];
	int nowners, owners_more;  /* holders named, and those past DOC_MAX_OWNERS */
	int service;               /* index into owners of the holder whose parent holds it not
	                            * (a prefork master), -1 none */
	long long conns;           /* connections seen on it over the window */
	int seen_last;             /* present in the last listener sample (else closed meanwhile) */
	struct doc_start start;    /* how the service's process would start again, read at once */
	char route_fix[600];       /* `ip route change ... quickack 1` for the route back to a
	                            * peer of it, when that route lacks it ("" unknown) */
	char route_peer[64];       /* that peer's address ("" none seen) */
	/* ---- for the path rules (findings_path.c) ---- */
	const struct doc_closed *closed; /* its connections freed over the window (NULL: not
	                                  * followed) */
	unsigned long long cgroup_id;    /* the cgroup it was made in (1: the root, the host) */
	char cong[16];                   /* its congestion control, which accepted connections
	                                  * copy ("" unknown) */
	/* the initial window in force for its far peers: a socktune cgroup program's
	 * --initcwnd, else their route's initcwnd, else the kernel's 10 */
	int iw;
	const char *iw_from;             /* "cgroup", "route", "default" */
	int cg_cong_set;                 /* a socktune program on its cgroup sets the congestion
	                                  * control: cg_cong */
	char cg_cong[16];
	int far_route_found;             /* the route to a far peer of it, in its namespace */
	struct st_route far_route;
};

/* The connection attempts a listener dropped over the window are known: its drop count was
 * read at two samples, the last at the window's end (else it closed meanwhile) */
static inline int doc_drops_known(const struct doc_listener *l)
{
	return l->mem_samples >= 2 && l->seen_last;
}

/* A connection on one of the listeners, over the window: the first and the last sample */
struct doc_conn {
	int listener;
	unsigned long long inode, cookie;
	struct diag_sock first, last;
	int samples;
	int from_start;            /* open when the window began: its counters count since */
	double first_t, last_t;    /* when the first and the last sample saw it (monotonic s) */
	uint32_t max_rtt, max_ato;
	/* samples that caught a small piece of data held unsent while data was in flight: what
	 * Nagle does (nothing else holds less than a segment back with the window open) */
	int held_samples;
	uint32_t held_bytes; /* ... what the last of them held */
	int nodelay;       /* as on doc_listener: the last read */
	int nodelay_off;   /* read as 0 at least once (an app may set it after accept) */
	int looks;         /* reads of its TCP_NODELAY tried during the window */
	long long sweep;   /* the last connection sample that saw it (shared_window.sweeps) */
	int freed;         /* the kernel freed it within the window: the listener's doc_closed
	                    * holds it, from its end (the path rules count it there) */
	/* samples that caught its peer held by our receive buffer: data the program had not
	 * read filling half the buffer or more, the window advertised under 4 segments; the
	 * last of them: the buffer, what it held, the window, the bytes received by then */
	int rcv_held_samples;
	uint32_t rcv_held_rcvbuf, rcv_held_rmem, rcv_held_wnd;
	uint64_t rcv_held_received;
	uint64_t end_received; /* bytes received at its end (the kernel's at close), 0: not seen */
	double max_rcv_pace;   /* the fastest it received between two samples, bytes a second */
	int pid, fd;       /* its holder, -1 when not found */
};

/* A sample s of a connection whose receive buffer holds its peer back: half of it or more
 * unread, the window advertised under 4 segments (the peer's sending stops there) */
static inline int doc_rcv_held(const struct diag_sock *s)
{
	return s->has_mem && s->info_len && s->mem[MEM_RCVBUF] &&
	       2ull * s->mem[MEM_RMEM] >= s->mem[MEM_RCVBUF] &&
	       s->ti.rcv_wnd < 4ull * (s->ti.rcv_mss ? s->ti.rcv_mss : 536);
}
/* Counts sample s of c in its rcv_held_* when it is one */
static inline void doc_rcv_held_add(struct doc_conn *c, const struct diag_sock *s)
{
	if (!doc_rcv_held(s))
		return;
	c->rcv_held_samples++;
	c->rcv_held_rcvbuf = s->mem[MEM_RCVBUF];
	c->rcv_held_rmem = s->mem[MEM_RMEM];
	c->rcv_held_wnd = s->ti.rcv_wnd;
	c->rcv_held_received = s->ti.bytes_received;
}

/* The window, as doctor fills it over its --seconds and watch over each --window (its
 * listener samples and its latest two connection samples): what the rules judge.  doctor's
 * own settings (json, targets, progress) ride along; watch leaves them 0. */
struct shared_window {
	int json;
	double seconds;
	const char *targets[64];
	int ntargets;
	struct doc_ns ns[DOC_MAX_NS];
	int nns;
	struct doc_listener l[DOC_MAX_LISTENERS];
	int nl;
	struct doc_conn *c;
	size_t nc, cap;
	int conns_dropped, listeners_dropped; /* past the tables' caps (connections: in the last
	                                       * sample) */
	int ns_dropped;                       /* targets in namespaces past DOC_MAX_NS */
	long long dump_errors;                /* samples the kernel refused or cut short */
	char dump_error[120];                 /* the first one's reason */
	int interrupted;                      /* a signal ended the window early */
	double final_t;                       /* when the last connection sample began */
	long long sweeps;                     /* connection samples of every namespace made */
	int progress;                         /* a line on stderr (a terminal) while it watches */
	int rto_min_us, delack_max_us;        /* this kernel has TCP_RTO_MIN_US, TCP_DELACK_MAX_US */
	/* what the sampling cost */
	long long listener_samples, conn_samples;
	double listener_sample_us, conn_sample_us; /* mean wall time of one */
	long long max_conns_in_sample;
	double elapsed_s, cpu_ms; /* the window's wall time; doctor's own CPU time over it */
};

/* A counter of tcp_info over the window: since the first sample for a connection open when
 * it began, else since the connection began (within the window). */
#define DOC_DELTA(c, f) \
	((c)->from_start ? (c)->last.ti.f - (c)->first.ti.f : (c)->last.ti.f)

/* record.h's key of counter k (C_*) */
#define DOC_COUNTER_KEY(k) (K_LISTEN_OVERFLOWS + (k))
_Static_assert(K_PRUNE_CALLED - K_LISTEN_OVERFLOWS == C_COUNT - 1,
               "record.h's counters follow window.h's C_* order");


#endif
