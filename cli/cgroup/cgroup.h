/* socktune --cgroup: the policy as a cgroup sock_ops program, made here at run time (no
 * libbpf, no clang, no object file), loaded with bpf(2) and attached to a cgroup of the
 * program's own, so that the kernel tunes each of its connections from the first one.
 *   bpf.c       the program made from the policy (its scope too), loaded, the verifier's log
 *   (cli/host/bpfcall.c: the other bpf(2) calls: attach, detach, query; cli/host/cgv2.c:
 *   the cgroup v2 mount, a process's cgroup)
 *   cgroup.c    the wrapper's own cgroup, the child made, entered, removed
 *   cgargs.c    the options the mode cannot set refused (both ways; which it sets: common/options.c st_sockops_sets)
 *   readback.c  a probe connection made inside the cgroup: what the kernel applied
 *   appread.c   the program's own first connections, read back from the wrapper's ticks
 *   ends.c      one end of a connection read and said (the probe's, the program's own)
 *   run.c       socktune --cgroup [OPTIONS] -- PROGRAM
 *   cgtarget.c  the cgroups a running server's listeners were made in
 *   hook.c      the setsockopt hook that holds the policy against the app's own calls, and
 *               the programs of a policy loaded, attached and detached together
 *   holdrange.c what the kernel takes of an app's value from any process (the hook's bounds)
 *   holdcount.c what the hook refused: its count map, read and said
 *   cgattach.c  socktune attach --cgroup PID|:PORT, socktune detach PID|:PORT|CGROUP
 * (cli/host/owned.c: what socktune attached, on record: ours is known by it) */
#ifndef SOCKTUNE_CGROUP_H
#define SOCKTUNE_CGROUP_H

#include <stdint.h>
#include <stdio.h>

#include "socktune.h"
#include "cli.h"
#include "host/bpfhost.h"
#include "host/bpf_abi.h"
#include "host/hostinfo.h"

/* ---- bpf.c ---- */

#define CG_MAX_INSNS 1024

/* The program for policy p (client: outgoing connections too; hz: the kernel's, for the
 * SYN RTO in jiffies) into insns (struct bpf_insn[max]).  The count, or -1 with err. */
int cg_prog_build(const struct st_policy *p, int client, long long hz,
                  const struct cli_peer *peers, int npeers, void *insns, int max, char *err,
                  size_t n);
/* Build and load it: the program's descriptor (close-on-exec) and *count its instructions,
 * or -1 with err (the verifier's last words quoted, or what the kernel refused and why). */
int cg_prog_load(const struct st_policy *p, int client, long long hz,
                 const struct cli_peer *peers, int npeers, int *count, char *err, size_t n);
/* The same, each connection it tunes marked in mark_fd (hook.c's BPF_MAP_TYPE_SK_STORAGE
 * map): CG_MARK_ACCEPTED, CG_MARK_OUTGOING (-1: unmarked, as cg_prog_load). */
enum { CG_MARK_ACCEPTED = 1, CG_MARK_OUTGOING = 2 };
int cg_prog_load_marked(const struct st_policy *p, int client, long long hz,
                        const struct cli_peer *peers, int npeers, int mark_fd, int *count,
                        char *err, size_t n);
/* Load insns[cnt] as a program of type and expected attach type, named name: its descriptor,
 * or -1 with err (what: "the sock_ops program"; needs: the kernel it takes, said when the
 * kernel refuses it). */
int cg_insns_load(int type, int attach, const char *name, const void *insns, int cnt,
                  const char *what, const char *needs, char *err, size_t n);

/* The instruction writer of both programs: instructions, and jumps to labels placed later.
 * Its tables hold as many labels and jumps as the instructions can use (a jump is an
 * instruction), so that the instruction count is the limit that binds. */
#define CG_MAX_LABELS (CG_MAX_INSNS + 16)
#define CG_MAX_JUMPS CG_MAX_INSNS
enum { CG_OVER_INSNS = 1, CG_OVER_LABELS, CG_OVER_JUMPS };
struct cg_gen {
	struct st_bpf_insn *v;
	int n, max, over; /* over: the first limit passed (CG_OVER_*), 0 */
	int label[CG_MAX_LABELS], nlabels;
	struct { int at, label; } jump[CG_MAX_JUMPS];
	int njumps;
};
void cg_emit(struct cg_gen *g, struct st_bpf_insn i);
int cg_label(struct cg_gen *g);
void cg_place(struct cg_gen *g, int l);
/* if (reg op imm) goto l (ST_BPF_JA: goto l); cg_jump32: (u32)reg; cg_jump_reg: reg op src */
void cg_jump(struct cg_gen *g, int op, int reg, int imm, int l);
void cg_jump32(struct cg_gen *g, int op, int reg, int imm, int l);
void cg_jump_reg(struct cg_gen *g, int op, int reg, int src, int l);
/* The jumps resolved: 0, or -1 with err naming the limit passed (what: "the program"). */
int cg_resolve(struct cg_gen *g, const char *what, char *err, size_t n);
/* ---- hook.c: the programs of a policy together: the sock_ops program (bpf.c), and the
 * CGROUP_SOCKOPT program at BPF_CGROUP_SETSOCKOPT (Linux 5.3) that holds its values against
 * the app's own setsockopt on the connections the sock_ops program tuned, counting each
 * override it refuses ---- */

struct cg_progs {
	int ops_fd;                 /* the sock_ops program */
	int hook_fd;                /* the setsockopt hook; -1: none (why in hook_why) */
	int mark_fd, count_fd;      /* its maps: the sockets tuned; the overrides counted */
	int insns, hook_insns;
	unsigned ops_id, hook_id;   /* the kernel's ids */
	int nheld;                  /* the options the hook holds (indexes of st_sockopts), in */
	int held[ST_O_COUNT];       /* the order of the count map */
	char hook_why[300];
};
/* Load the programs of policy p: 0, or -1 with err (nothing left loaded). */
int cg_progs_load(const struct st_policy *p, int client, long long hz,
                  const struct cli_peer *peers, int npeers, struct cg_progs *g, char *err,
                  size_t n);
void cg_progs_close(struct cg_progs *g);
/* Attach them to cgroup_fd with BPF_PROG_ATTACH and BPF_F_ALLOW_MULTI (they stay after the
 * process that attached them ends, until detached or the cgroup is removed): 0, or -1 with
 * err (and neither attached). */
int cg_progs_attach(const struct cg_progs *g, int cgroup_fd, char *err, size_t n);
/* Detach both from cgroup_fd (one already gone is no error): 0, or -1 with errno. */
int cg_progs_detach(const struct cg_progs *g, int cgroup_fd);
/* The ends (bit 0: accepted, bit 1: outgoing) on which the hook holds option i of p. */
int cg_hold_ends(const struct st_policy *p, int client, int i);
/* What the hook refused of held option k (an index of g->held) on end (0: accepted, 1:
 * outgoing): the app's calls whose value it replaced, and the app's last value (a name
 * option's: name).  0, or -1 (no hook, or the map not read). */
struct cg_override {
	unsigned long long count;
	long long last;
	char name[16];
};
int cg_progs_count(const struct cg_progs *g, int k, int end, struct cg_override *o);
/* The same for a hook known by its id only (attach --cgroup's, read by detach): each slot of
 * its count map in order (held option k's end e at 2k+e) into c[max]; the count, or -1. */
int cg_hook_counts_of(unsigned hook_id, struct cg_override *c, int max);
/* The options the hook holds, as keys, in the count map's order ("nodelay rcvbuf"). */
void cg_progs_held_keys(const struct cg_progs *g, char *out, size_t n);
/* The wrapper's word on them: one event=app-override line for each held option and end the
 * first time its count is not 0 (said[k][end]: the count said, 0 at first), and with final
 * one more with the totals, for each counted.  One map lookup per held option and end. */
void cg_progs_tell(const struct cg_progs *g, const struct st_policy *p, int client,
                   const char *dir, unsigned long long said[][2], int final);

/* ---- holdrange.c: what the kernel takes of an app's value from any process (the hook
 * replaces only such a value, and only with such a value) ---- */

struct int_range {
	long long lo, hi;
	int zero;        /* 0 taken too */
	const char *who; /* refused beyond it to a process without: (NULL: to anyone, EINVAL) */
};
/* The range of (level, optname) at hz: 1 when it has one (else any int is taken). */
int cg_int_range(int level, int optname, long long hz, struct int_range *r);
int cg_in_range(const struct int_range *r, long long v);
/* The congestion controls any process may choose (net.ipv4.tcp_allowed_congestion_control) */
#define CC_MAX 16
struct cg_cc_allowed {
	int n;
	char name[CC_MAX][16];
	char text[256]; /* as read, for the line that says why */
};
void cg_cc_allowed_read(struct cg_cc_allowed *a);
/* Whether the hook may hold option i at policy value want (a name option: name): 1, or 0
 * with why (the policy's value needs a capability the app may lack; "" when the kernel
 * refuses it to anyone, which the probe connection says). */
int cg_holdable(int i, long long want, const char *name, long long hz,
                const struct cg_cc_allowed *cc, char *why, size_t n);

/* ---- holdcount.c: the count map's slots, read and said ---- */

/* The count map's value: one per held option and end (key 2 * k + end, k an index of
 * held[], end 0 accepted, 1 outgoing) */
struct cg_override_slot {
	uint64_t count; /* the app's calls whose value the hook replaced */
	uint64_t last;  /* the app's last such value, as 64 bits (a signed int sign-extended) */
	char name[16];  /* the app's last name (TCP_CONGESTION) */
};

/* ---- cgroup.c ---- */

/* The wrapper's own v2 cgroup, as a directory (cg_pid_dir for itself). */
int cg_own_dir(char *out, size_t n, char *err, size_t en);
/* --cgroup-path as given, made absolute into out: the real path of its parent (symlinks,
 * ".." and a relative start resolved) and its own name, trailing slashes gone.  A parent
 * that does not resolve leaves the path as given (cg_make then says why). */
void cg_path_norm(const char *path, char *out, size_t n);
/* Make the cgroup dir (*made: 1 when it was made here, 0 when it was there already):
 * 0, or -1 with err (the cause and the remedy). */
int cg_make(const char *dir, int *made, char *err, size_t n);
/* Move the calling process into dir (cgroup.procs): 0 or -1 with errno. */
int cg_enter(const char *dir);
/* The pids in dir (cgroup.procs), up to max; the count, or -1. */
int cg_pids(const char *dir, int *pids, int max);
/* Remove dir once it is empty, waiting at most ms for the processes left in it (reaping
 * those that are ours): 0, or -1 with err naming those left. */
int cg_remove(const char *dir, int ms, char *err, size_t n);

/* ---- cgtarget.c: the cgroups a target's listeners were made in ---- */

struct cg_where {
	char dir[4096];           /* the cgroup directory */
	unsigned long long id;    /* its inode, the kernel's cgroup id */
	int root;                 /* it is the root cgroup: the whole host */
	int listeners, kept;      /* the target's listeners made there; connections open on them */
	char now[4096];           /* a PID target: the cgroup it is in now ("" unknown) */
	struct cg_conn *conns;    /* those connections (malloc'd: cg_where_free), at most
	                           * CG_MAX_CONNS */
	int nconns;
};
struct cg_conn { /* a connection open on a target's listener, as sock_diag saw it */
	unsigned long long cookie, inode;
	int family;
	unsigned sport, dport;
	unsigned char src[16], dst[16];
};
#define CG_MAX_CONNS 65536
void cg_where_free(struct cg_where *w, int n);
/* The cgroups target's listeners were made in (sock_diag's INET_DIAG_CGROUP_ID, looked for
 * under the v2 mount), into w[max] (*more: how many more there are): the count, or -1 with
 * err and *status (EXIT_USAGE: no target; EXIT_NOT_FOUND: no such process, no listener; 1:
 * the kernel does not say). */
int cg_target(const char *target, struct cg_where *w, int max, int *more, int *status, char *err,
              size_t n);

/* ---- cgconns.c: attach --cgroup --connections ---- */

/* The connections open on target's listeners in cgroup w (w->conns), which the program
 * attached there never sees, set once through the TCP iterator with what it sets on an
 * accepted connection (what an open one still takes); each said a line (event
 * attach-connection, via=bpf), or added to doc (an array of sockets) under --json.  The
 * number refused (options, or connections the iterator could not reach). */
struct rec;
int cg_conns_apply(const char *target, const struct cg_where *w, const struct st_policy *p,
                   struct rec *doc, char *err, size_t n);

/* ---- cgattach.c: socktune attach --cgroup, socktune detach ---- */

struct cg_detach_args {
	int json, root;  /* --json, --cgroup-root */
	char **targets;  /* PIDs and :PORTs, NULL-terminated */
};
/* attach --cgroup TARGET...: the policy's program attached (BPF_F_ALLOW_MULTI) to each
 * target's listeners' cgroup, read back there; ours already there replaced. */
int cg_attach_main(const struct cli *c, const struct st_policy *p);
enum cli_status cg_detach_parse(int argc, char **argv, void *args, FILE *msg); /* cg_detach_args */
int cg_detach_main(void *args);
void detach_help(FILE *f);

/* ---- cgargs.c ---- */

/* Under --cgroup: an option of p the program cannot set, refused (the mode that sets it
 * named).  Elsewhere: an option only --cgroup sets, refused.  CLI_GO or CLI_BAD, said. */
enum cli_status cg_check(const struct cli *c, const struct st_policy *p, FILE *msg);

/* ---- readback.c ---- */

/* A probe connection made by a child moved into dir: what the kernel applied, logged (one
 * line for the accepted end, one for the outgoing one with client).  0; 1 when a value was
 * refused (said: nothing may stay attached); -1 when the probe could not be made (said).
 * Peers that leave out the probe's, 127.0.0.1: not read back, said, 0. */
int cg_readback(const char *dir, const struct st_policy *p, int client, const struct host *h,
                int insns, unsigned prog_id, const struct cli_peer *peers, int npeers);
/* The program's own connections, read back while it runs (the probe shows what the cgroup's
 * program sets; only the program's own show what the program did after it): one tick of
 * the wrapper's, armed by cg_readback with its cgroup and policy.  One sock_diag dump per
 * call at most, of the sockets of the cgroup and its descendants only (the kernel's cgroup
 * filter, Linux 5.10; before it, every socket, those of the tree kept); the first accepted
 * connection (with client, the first outgoing one too) that the sock_ops program tuned, a
 * tick old (the program may set its own options right after accept), read from a copy of
 * its descriptor (pidfd_getfd) and said in one line, source=app (level=warn where it reads
 * another value than the policy's, with the cure); then nothing more.  Tuned: marked in the
 * mark map given to cg_app_follow; without one, in --ports, --client-ports and --peer.  It
 * gives up after 120 looks (30 s of ticks), said once.  1 while it still looks, 0 once done
 * (final: done). */
int cg_app_readback(int final);
/* Called before cg_readback by a caller that ticks cg_app_readback (the run mode): the
 * probe's words say the program's own connection is read, and mark_fd (struct cg_progs's,
 * -1: none) tells which connections the sock_ops program tuned. */
void cg_app_follow(int mark_fd);

/* ---- ends.c: one end's values read, and said (readback.c's probe, appread.c's) ---- */

#define UNREAD (-(1LL << 62))
struct cg_end {
	long long got[ST_O_COUNT]; /* UNREAD: not read (not set, or nothing reads it back) */
	char name[ST_O_COUNT][16];
	int clamp_hidden; /* the cwnd clamp set, its only read-out (ssthresh) at infinity */
};
/* The options p sets on that end read from socket fd into e. */
void cg_read_end(int fd, const struct st_policy *p, int outgoing, struct cg_end *e);
/* One end's line (app: 0 the probe's, 1 the program's own connection, 2 the same where the
 * hook holds what it holds); 1 when a value was not applied (the kernel refused it; on the
 * program's own connection: it reads another). */
int cg_say_end(const struct st_policy *p, const struct cg_end *e, int outgoing,
               const struct host *h, const char *dir, int insns, unsigned prog_id, int app);
/* (appread.c) The app read-back armed for the cgroup dir (cg_readback does it); whether the
 * caller ticks it (cg_app_follow was called). */
void cg_app_arm(const char *dir, const struct st_policy *p, int client, const struct host *h,
                int insns, unsigned prog_id, const struct cli_peer *peers, int npeers);
int cg_app_followed(void);

/* ---- run.c ---- */

int cgroup_main(const struct cli *c, const struct st_policy *p);

#endif
