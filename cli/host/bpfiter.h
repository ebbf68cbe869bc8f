/* Options set on another process's open TCP connections without ptrace: a BPF iterator over
 * the TCP sockets of a network namespace (Linux 6.4+), its program made here for the list
 * given, run once, and gone when the call returns.
 *
 * The kernel runs the program once for every TCP socket of the namespace the iterator was
 * made in (listeners, connections, and the request and TIME_WAIT sockets, which take no
 * option), each under its socket lock.  The program picks the sockets asked for by their
 * cookie (sock_diag's idiag_cookie, struct diag_sock's cookie, ss -e's sk:HEX), calls
 * bpf_setsockopt for each of that socket's options, reads each back with bpf_getsockopt
 * where the kernel lets it, and writes one record per socket into what the iterator's
 * read() returns: what the kernel did is known from the same call.  A connection closed
 * since its cookie was read may be met as its TIME_WAIT socket, which keeps the cookie:
 * visited, every option EINVAL.
 *
 * The limits a process meets in setsockopt still hold (SO_RCVBUF and SO_SNDBUF: at most
 * net.core.rmem_max and wmem_max, read back doubled; TCP_MAXSEG on an established connection
 * is kept for later and reads back the MSS in use).
 * bpf_setsockopt takes SOL_SOCKET SO_RCVBUF, SO_SNDBUF, SO_KEEPALIVE, SO_PRIORITY,
 * SO_MAX_PACING_RATE, SO_MARK, ...; IPPROTO_TCP TCP_NODELAY, TCP_MAXSEG, TCP_KEEPIDLE,
 * TCP_WINDOW_CLAMP, TCP_USER_TIMEOUT, TCP_NOTSENT_LOWAT, TCP_RTO_MAX_MS and the BPF-only
 * TCP_BPF_* (TCP_BPF_IW only before the connection sent data); not TCP_QUICKACK, nor a
 * listener's backlog (listen() alone sets it).  Internal to cli/. */
#ifndef SOCKTUNE_BPFITER_H
#define SOCKTUNE_BPFITER_H

#include <stddef.h>
#include <stdint.h>

#include "host/bpf_abi.h"

/* The BPF-only TCP options (linux/bpf.h; this machine's headers lack the later ones) */
#define BI_TCP_BPF_IW 1001
#define BI_TCP_BPF_SNDCWND_CLAMP 1002 /* also sets snd_ssthresh: tcp_info shows it there */
#define BI_TCP_BPF_DELACK_MAX 1003    /* microseconds */
#define BI_TCP_BPF_RTO_MIN 1004       /* microseconds */
#define BI_TCP_BPF_SOCK_OPS_CB_FLAGS 1008
#define BI_TCP_RTO_MAX_MS 44          /* Linux 6.15, a plain option too */

/* Distinct options (level, optname, value) in one call: the program's record has a slot for
 * each, on its 512-byte stack */
#define BI_MAX_OPTS 32

struct bi_opt {
	int level, optname, value; /* an int option (4 bytes) */
};

/* What the kernel did with one option on one socket */
enum { BI_NOT_RUN = -1 };
struct bi_res {
	int err;      /* 0: applied; an errno the kernel gave (EINVAL...); BI_NOT_RUN: the socket
	               * was not visited (gone, or not in the namespace) */
	int read_err; /* 0: value is the read-back; an errno (EINVAL: bpf_getsockopt does not read
	               * that option); BI_NOT_RUN: not read (no read-back asked, or not visited) */
	int value;    /* read back by bpf_getsockopt after the set (SO_RCVBUF: doubled); 0 when
	               * not read */
};

/* One socket and its options (the same option twice on one socket is refused); res[] in the
 * same order, filled by bi_apply.  The options are applied in the order they first appear
 * in the call: a list that every socket shares, in its own order. */
struct bi_sock {
	unsigned long long cookie;
	const struct bi_opt *opts;
	int nopts;
	int visited;                    /* out: the iterator reached it and acted on it */
	struct bi_res res[BI_MAX_OPTS]; /* out */
};

/* What the call held in the kernel while it ran (all of it released when it returns) and
 * what it saw */
struct bi_run {
	unsigned prog_id, map_id, link_id;
	int insns;       /* the program's length */
	long records;    /* records read from the iterator */
	int not_visited; /* sockets asked for that no record came back for */
};

/* What one call does with each option: set it; set it and read it back in the same pass
 * (under the same socket lock); or only read it (the value before a change, or what a
 * socket holds now: the option's value is not used) */
enum { BI_SET, BI_SET_READ, BI_READ };

/* Set the options of socks[n] on the TCP sockets of the network namespace netns_fd (a
 * descriptor of /proc/PID/ns/net or /run/netns/NAME; -1: the caller's own), each socket
 * found by its cookie; readback: BI_SET, BI_SET_READ or BI_READ.  The program, its
 * map, its link and the iterator are closed before it returns, on every path.  0 when the
 * iterator ran to its end (each socket's results in socks[], per option: applied or the
 * errno); -1 with err (one sentence: what failed and why) when it could not run or stopped
 * early (then socks[] hold what came back before it stopped).  run may be NULL. */
int bi_apply(int netns_fd, struct bi_sock *socks, int n, int readback, struct bi_run *run,
             char *err, size_t en);

/* Whether this path can be taken here, for the calling process: 0, or -1 with why, one
 * sentence: the kernel before 6.4; no /sys/kernel/btf/vmlinux; no bpf_iter_tcp in it; no
 * CAP_BPF with CAP_PERFMON, nor CAP_SYS_ADMIN; the program refused (the verifier's last
 * line quoted).  It loads a program like bi_apply's and closes it at once: nothing runs. */
int bi_probe(char *why, size_t n);

/* The running kernel is 6.4 or later (the TCP iterator's locking fix): 1, or 0 with why. */
int bi_kernel_ok(char *why, size_t n);

/* ---- bpfiterprog.c: the program of one call ---- */

/* The record the program writes for each socket it acts on: its cookie (8 bytes), the
 * options it was asked for (8: bit k for distinct option k of the call), then a slot for
 * each distinct option of the call, in their order */
struct bi_slot {
	int32_t set;   /* bpf_setsockopt's return: 0 or -errno; BI_SLOT_NOT_RUN: not asked */
	int32_t get;   /* bpf_getsockopt's: 0 or -errno; BI_SLOT_NOT_RUN: no read-back asked */
	int32_t value; /* the value read back */
};
enum { BI_SLOT_NOT_RUN = 1, BI_REC_HEAD = 16 };
#define BI_REC_SIZE(nopt) (BI_REC_HEAD + (int)sizeof(struct bi_slot) * (nopt))

#define BI_MAX_INSNS 1024
struct bi_prog {
	struct st_bpf_insn v[BI_MAX_INSNS];
	int n;
};
/* The program for the distinct options opt[nopt] (at most BI_MAX_OPTS), readback as bi_apply's,
 * its sockets' options in map map_fd (cookie -> bits): its instruction count, or -1. */
int bi_prog_build(struct bi_prog *g, const struct bi_opt *opt, int nopt, int readback,
                  int map_fd);

#endif
