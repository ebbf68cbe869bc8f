/* socktune doctor: what its parts share.  diag.c reads sockets through NETLINK_SOCK_DIAG,
 * doctor.c samples the listeners and their connections over the window, findings.c turns
 * the numbers into findings with their evidence and fixes, doctor_out.c prints them.
 * Internal to cli/. */
#ifndef SOCKTUNE_DOCTOR_H
#define SOCKTUNE_DOCTOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

/* ---- diag.c: one socket as sock_diag reports it ---- */

/* struct tcp_info as the kernel lays it out (linux/tcp.h), written out: musl's include path
 * has no linux/ headers.  It only grows at its end; the kernel says how long its copy is, and
 * a field past that length stays 0 (info_len says which are there). */
struct diag_tcp_info {
	uint8_t state, ca_state, retransmits, probes, backoff, options, wscale, flags;
	uint32_t rto, ato, snd_mss, rcv_mss;
	uint32_t unacked, sacked, lost, retrans, fackets;
	uint32_t last_data_sent, last_ack_sent, last_data_recv, last_ack_recv;
	uint32_t pmtu, rcv_ssthresh, rtt, rttvar, snd_ssthresh, snd_cwnd, advmss, reordering;
	uint32_t rcv_rtt, rcv_space, total_retrans;
	uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
	uint32_t segs_out, segs_in, notsent_bytes, min_rtt, data_segs_in, data_segs_out;
	uint64_t delivery_rate, busy_time, rwnd_limited, sndbuf_limited;
	uint32_t delivered, delivered_ce;
	uint64_t bytes_sent, bytes_retrans;
	uint32_t dsack_dups, reord_seen, rcv_ooopack, snd_wnd, rcv_wnd, rehash;
	uint16_t total_rto, total_rto_recoveries;
	uint32_t total_rto_time;
};

/* The kernel's sk_meminfo (SK_MEMINFO_*) */
enum { MEM_RMEM, MEM_RCVBUF, MEM_WMEM, MEM_SNDBUF, MEM_FWD, MEM_QUEUED, MEM_OPT, MEM_BACKLOG,
       MEM_DROPS, MEM_VARS };

/* TCP states as the kernel numbers them (include/net/tcp_states.h) */
enum { TS_ESTABLISHED = 1, TS_SYN_SENT, TS_SYN_RECV, TS_FIN_WAIT1, TS_FIN_WAIT2, TS_TIME_WAIT,
       TS_CLOSE, TS_CLOSE_WAIT, TS_LAST_ACK, TS_LISTEN, TS_CLOSING };

struct diag_sock {
	int family;
	unsigned state;
	unsigned sport, dport;
	unsigned char src[16], dst[16];
	unsigned long long inode, cookie;
	unsigned uid;
	unsigned rqueue, wqueue; /* a listener: accept queue now, backlog in force */
	size_t info_len;         /* bytes of tcp_info the kernel gave; 0: none */
	struct diag_tcp_info ti;
	int has_mem;
	uint32_t mem[MEM_VARS];
};

/* Every TCP socket of the netlink socket's network namespace in one of the states of the
 * mask (1 << TS_x), both families, each passed to cb; returns how many, or -errno. */
typedef void (*diag_cb)(const struct diag_sock *s, void *ctx);
int diag_dump(int nl, unsigned states, int with_info, diag_cb cb, void *ctx);
/* Dumps whose answer the kernel flagged NLM_F_DUMP_INTR (sockets came and went meanwhile) */
extern long diag_interrupted;
/* A NETLINK_SOCK_DIAG socket in pid's network namespace (0: ours), or -errno. */
int diag_open(int pid);
/* Into pid's network namespace (setns: CAP_SYS_ADMIN): what diag_leave needs to come back
 * (DIAG_SAME_NS when it is ours already), or -errno; and back. */
#define DIAG_SAME_NS (-100000)
int diag_enter(int pid);
int diag_leave(int self);
/* "127.0.0.1:8080", "[::1]:8080" */
void diag_addr(int family, const unsigned char *a, unsigned port, char *out, size_t n);

/* ---- holders.c: which process holds which socket ---- */

struct holder {
	unsigned long long ino;
	int pid, fd;
};
struct holders {
	struct holder *h;
	size_t n, cap;
};
/* The socket descriptors of pids (NULL: of every process this user may see), by inode */
void holders_scan(struct holders *hs, const int *pids, int npids);
/* The first holder of ino, or NULL; the others follow it. */
const struct holder *holders_find(const struct holders *hs, unsigned long long ino);
void comm_of(int pid, char *out, size_t n);
/* fmt appended to the string in buf (n bytes), cut at its end */
void doc_say(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* pid's command line as a shell would take it back, or why it cannot be shown */
void cmdline_of(int pid, char *out, size_t n);
unsigned long long netns_of(int pid); /* the inode of its network namespace; 0: ours */

/* ---- doctor.c: the window's samples ---- */

#define DOC_MAX_NS 16
#define DOC_MAX_LISTENERS 256
#define DOC_MAX_OWNERS 8

/* The counters of a network namespace, at the start and the end of the window */
enum { C_LISTEN_OVERFLOWS, C_LISTEN_DROPS, C_SYN_RETRANS, C_RETRANS_SEGS, C_TIMEOUTS,
       C_RCVQ_DROP, C_PRUNE, C_COUNT };
extern const char *const doc_counter_names[C_COUNT];
struct doctor;

struct doc_ns {
	unsigned long long ino; /* of /proc/PID/ns/net */
	int pid;                /* one process in it (0: ours) */
	int nl;                 /* its sock_diag socket, -1 when not reachable */
	int ours;
	long long start[C_COUNT], end[C_COUNT]; /* -1: unreadable */
	long long somaxconn, rmem_max, wmem_max, tcp_mem[3], rmem[3], wmem[3];
	char error[160];
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

struct doc_listener {
	int ns; /* index into doctor.ns */
	int family;
	unsigned port;
	unsigned char addr[16];
	unsigned long long inode;
	unsigned backlog, queue_now, queue_peak;
	long long asked;           /* the backlog the application asked, -1 unknown */
	uint32_t rb, tb;
	/* connection attempts it dropped (its sk_drops: the kernel counts each ListenDrops on
	 * the listener too), at the first and the last sample */
	uint32_t drops_first, drops_last;
	int mem_samples;           /* samples that carried them: 2 or more, the drops are known */
	int nodelay;               /* 1, 0, -1 not looked at, -2 could not look */
	char nodelay_why[96];
	struct doc_owner owners[DOC_MAX_OWNERS];
	int nowners;
	long long conns;           /* connections seen on it over the window */
	int seen_last;             /* present in the last listener sample (else closed meanwhile) */
	char cmd[1024];            /* the first owner's command line, shell-quoted, read at once */
	char route_fix[600];       /* `ip route change ... quickack 1` for the route back to a
	                            * peer of it, when that route lacks it ("" unknown) */
};

/* A connection on one of the listeners, over the window: the first and the last sample */
struct doc_conn {
	int listener;
	unsigned long long inode, cookie;
	struct diag_sock first, last;
	int samples;
	int from_start;            /* open when the window began: its counters count since */
	double first_t, last_t;    /* when the first and the last sample saw it (monotonic s) */
	uint32_t max_rtt, max_ato;
	int nodelay; /* as on doc_listener */
	int pid, fd; /* its holder, -1 when not found */
};

struct doc_findings;

struct doctor {
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

/* netns.c: the namespace of pid (0: ours) among d's, added with its sock_diag socket and
 * limits when new; its index, or -1 */
int doc_ns_add(struct doctor *d, int pid);
void doc_ns_counters(const struct doc_ns *ns, long long *out); /* now, -1 each unreadable */
/* Each listener's route_fix: the route, in its namespace, to the peer of its last connection
 * seen, when that route lacks quickack (check --route's lookup) */
void doc_routes_back(struct doctor *d);

enum cli_status doctor_parse(int argc, char **argv, struct doctor *d, FILE *msg);
int doctor_main(struct doctor *d);

/* ---- findings.c ---- */

enum doc_severity { SEV_INFO, SEV_WARNING, SEV_CRITICAL };

#define DOC_MAX_FINDINGS 64
#define DOC_MAX_FIXES 4

struct doc_finding {
	const char *kind;
	enum doc_severity severity;
	const char *certainty; /* high, medium, low */
	int listener;          /* index, -1: the namespace */
	int pid;
	unsigned port;
	char summary[200];
	char evidence[600];    /* key=value pairs, space-separated: the numbers */
	char fix[DOC_MAX_FIXES][1200];
	int nfix;
};

struct doc_findings {
	struct doc_finding f[DOC_MAX_FINDINGS];
	int n, dropped; /* dropped: past DOC_MAX_FINDINGS */
};

void doctor_findings(const struct doctor *d, struct doc_findings *out);
const char *doc_severity_name(enum doc_severity s);

/* ---- doctor_out.c ---- */
void doctor_print_text(FILE *f, const struct doctor *d, const struct doc_findings *fs);
void doctor_print_json(FILE *f, const struct doctor *d, const struct doc_findings *fs);
/* Connections of listener l (-1: all), worst first: indexes into d->c, at most max. */
size_t doctor_worst(const struct doctor *d, int l, size_t *idx, size_t max);
/* Shares of busy time, in percent: -1 when there was no busy time. */
double doc_share(uint64_t part, uint64_t busy);

#endif
