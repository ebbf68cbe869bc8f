/* The host view's sockets and their holders: one TCP socket as sock_diag reports it (diag.c),
 * which process holds which socket (holders.c).  What doctor, attach and a service look read;
 * nothing here knows a subcommand.  Internal to cli/. */
#ifndef SOCKTUNE_DIAG_H
#define SOCKTUNE_DIAG_H

#include <stddef.h>
#include <stdint.h>

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
	/* the cgroup v2 directory (its inode) the socket was made in, an accepted one its
	 * listener's (INET_DIAG_CGROUP_ID, Linux 5.7); 0: not said */
	unsigned long long cgroup_id;
	size_t info_len;         /* bytes of tcp_info the kernel gave; 0: none */
	struct diag_tcp_info ti;
	int has_mem;
	uint32_t mem[MEM_VARS];
	char cong[16];           /* its congestion control (INET_DIAG_CONG; dumps with tcp_info
	                          * ask for it), "" not said */
};

/* Every TCP socket of the netlink socket's network namespace in one of the states of the
 * mask (1 << TS_x), both families, each passed to cb; returns how many, or -errno.
 * with_info 1: with tcp_info and memory; DIAG_MEM_ONLY: memory only; 0: neither. */
typedef void (*diag_cb)(const struct diag_sock *s, void *ctx);
#define DIAG_MEM_ONLY 2 /* as with_info: the memory (rb, tb, drops) without tcp_info */
int diag_dump(int nl, unsigned states, int with_info, diag_cb cb, void *ctx);
/* The same, only the sockets whose local port is one of ports (at most DIAG_MAX_PORTS),
 * filtered by the kernel (inet_diag bytecode): a listener's connections, not the node's */
#define DIAG_MAX_PORTS 32
int diag_dump_ports(int nl, unsigned states, int with_info, const unsigned *ports, int nports,
                    diag_cb cb, void *ctx);
/* The same, only the sockets made in one of the cgroups ids (v2 ids: the directories'
 * inodes; at most DIAG_MAX_CGROUPS), filtered by the kernel (Linux 5.10; before it -EINVAL) */
#define DIAG_MAX_CGROUPS 64
int diag_dump_cgroups(int nl, unsigned states, int with_info, const unsigned long long *ids,
                      int nids, diag_cb cb, void *ctx);
/* One sock_diag message (a header and its body, len bytes: a dump's or a destroy
 * notification's) into s: 1, or 0 when it is none (too short, its length past len).  Every
 * attribute is read within the message: a hostile or cut one yields less, never more. */
int diag_parse(const void *msg, size_t len, struct diag_sock *s);
/* Dumps whose answer the kernel flagged NLM_F_DUMP_INTR (sockets came and went meanwhile) */
extern long diag_interrupted;
/* A NETLINK_SOCK_DIAG socket in pid's network namespace (0: ours), or -errno. */
int diag_open(int pid);
/* A NETLINK_SOCK_DIAG socket of type (SOCK_DGRAM, SOCK_RAW, with SOCK_NONBLOCK or not) made
 * in pid's network namespace (pid <= 0: ours), close-on-exec: its descriptor, or -errno. */
int diag_socket_in(int pid, int type);
/* diag_open's socket in the namespace of netns_fd (a /proc/PID/ns/net or /run/netns/NAME
 * descriptor; -1: ours), and diag_enter's for it */
int diag_open_netns(int netns_fd);
int diag_enter_fd(int netns_fd);
/* Into pid's network namespace (setns: CAP_SYS_ADMIN): what diag_leave needs to come back
 * (DIAG_SAME_NS when it is ours already), or -errno; and back. */
#define DIAG_SAME_NS (-100000)
int diag_enter(int pid);
void diag_leave(int self); /* (back, or the process ends: 70) */
/* Whether a listener on (lfamily, laddr, lport) takes a connection to (family, addr, port):
 * 2 on the same address, 1 on a wildcard one of a family that takes it (an IPv6 wildcard
 * takes IPv4 connections too, as IPv6 sockets), 0 not. */
int diag_listener_takes(int lfamily, const unsigned char *laddr, unsigned lport, int family,
                        const unsigned char *addr, unsigned port);
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
/* One more holder (nothing when memory ran out: the socket is then not found held) */
void holders_add(struct holders *hs, unsigned long long ino, int pid, int fd);
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
/* arg appended to out as one shell word: as it is when plain, else in single quotes */
void doc_quote(char *out, size_t n, const char *arg);
int ppid_of(int pid); /* its parent, or -1 */
/* The length of the character at u when it is one to print (not a control character, C0,
 * DEL or C1, and valid UTF-8), else 0 */
int doc_printable_len(const unsigned char *u);

#endif
