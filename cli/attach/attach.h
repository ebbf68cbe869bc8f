/* socktune attach and the wrapper's attach mode (supervise.c): their entry points, and what
 * attach.c, its tuning step (attachtune.c) and supervise.c share.  Internal to cli/. */
#ifndef SOCKTUNE_ATTACH_H
#define SOCKTUNE_ATTACH_H

#include <stdio.h>

#include "cli.h"
#include "record.h"
#include "via.h"
#include "host/itertune.h"
#include "host/service.h"
#include "host/sockcopy.h"

/* ---- attach.c: socktune attach (policyargs.c parses its command line) ---- */

struct attach_args {
	int json, connections, follow;
	int via;        /* enum via (via.h) */
	char **targets; /* PIDs and :PORTs, NULL-terminated */
};
int attach_main(const struct attach_args *a, const struct st_policy *p);
/* attachargs.c: attach's --help; whether it takes policy option id (the others cannot
 * reach a running server's sockets from outside); and the refusal of a command line that
 * would apply nothing (CLI_BAD, the reason and what to add said on msg). */
void attach_help(FILE *f);
int attach_takes(int id);
enum cli_status attach_check(const struct cli *c, const struct st_policy *p, FILE *msg);

/* ---- supervise.c: socktune --attach PROGRAM: the program as a child, tuned from outside ---- */
int supervise_main(const struct cli *c, const struct st_policy *p);

/* ---- what attach.c, attachtune.c, attachwatch.c, attachreset.c and supervise.c share ---- */

struct attach_pidfd {
	int pid, pidfd;
};

struct attach_watched { /* a connection given TCP_NODELAY, sampled after (attachwatch.c) */
	const struct service *svc;
	unsigned long long ino;
	int pid, fd, family;
	unsigned sport;
	unsigned char src[16], dst[16];
	struct diag_tcp_info ti[2];
	int have; /* bit 0: in the first sample, bit 1: in the second */
	int stalled;
};

struct attach_state {
	const struct st_policy *p;
	FILE *out;       /* the lines: stdout (attach); the wrapper's attach mode: a buffer */
	FILE *err;       /* refusals, clamps: stderr (attach); the wrapper's: the same buffer */
	int json;
	int connections; /* --connections */
	int wrapper;     /* the wrapper's attach mode: a listener is said once, when tuned */
	long tuned, refused;
	struct attach_pidfd *pidfds; /* one per process reached, opened once */
	size_t npidfds, cappidfds;
	struct svc_pids said;  /* pids whose refusal was said */
	const struct service *cur;   /* the service being looked at */
	struct attach_watched *watch; /* connections given TCP_NODELAY (attachwatch.c) */
	size_t nwatch, capwatch;
	int write_err;         /* the first error writing the lines (EPIPE: the reader left) */
	/* --json: the run's one document, written when attach ends; each socket an object of
	 * its "sockets", each clamp, refusal or stall one of its "warnings" */
	struct rec *doc, *sockets, *warnings;
	char error[256]; /* --json: the first failure, the document's "error" */
	int said_quickack;
	struct attach_resets *resets; /* listeners whose new connections are read back
	                               * (attachreset.c) */
	int reset_over;               /* that look is over: later listeners are not added */
	int via;                      /* --via (enum via): the wrapper's attach mode, pidfd */
	const char *target;           /* the target looked at, as given */
	struct attach_bpf *q;         /* the sockets of this look for the iterator (attachbpf.c) */
	size_t nq, capq;
	int no_iter;                  /* the iterator cannot be used here: bpf_why says why */
	char bpf_why[400];
	int both_said;                /* a socket neither path reaches: said once */
};

/* What the service look asks for under t's options. */
unsigned attach_want(const struct attach_state *t);
/* One look at svc: each new socket of it tuned through a copy held only for the change,
 * its line written after the copy is closed.  0, or -errno when the look failed. */
int attach_look(struct attach_state *t, struct service *svc);
/* (pidfds.c) The pidfd of pid (opened at the first call, kept), or -1 with errno. */
int attach_pidfd(struct attach_state *t, int pid);
/* Forget pid's pidfd (it exited). */
void attach_pidfd_drop(struct attach_state *t, int pid);
/* "socktune: attach PID: CALL: why: fix", once per pid; counts a refusal */
void attach_refuse(struct attach_state *t, int pid, const char *call, int err);
/* A failure of the run's own (a target not found, not readable): its line on stderr, and
 * under --json the document's "error" (the first) and a warning of kind KIND. */
void attach_fail(struct attach_state *t, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- attachwatch.c: after TCP_NODELAY on live connections, the stall a peer's own Nagle
 * makes against the server's delayed ACK ---- */

/* Whether connections tuned now are watched: --connections --nodelay, no delay cap set. */
int attach_watch_wanted(const struct attach_state *t);
void attach_watch_add(struct attach_state *t, const struct service *svc, const struct svc_sock *s,
                      int pid, int fd);
/* Two samples of the watched connections a second apart; a line on t->err for each listener
 * whose peers show the stall (doctor's rule), with the fix. */
void attach_watch_check(struct attach_state *t);

/* ---- attachreset.c: after a listener is tuned, does the program set its own value on each
 * connection it accepts (TCP_NODELAY off: hyper 0.14, Erlang inets)? ---- */

struct attach_tuned;
/* Listener s, tuned (r): its new connections to be read back (not in the wrapper, nor in a
 * dry run, nor once the look is over). */
void attach_reset_add(struct attach_state *t, const struct svc_sock *s, int pid, int fd,
                      const struct attach_tuned *r);
/* Right after target's listeners were tuned: the connections made before are noted. */
void attach_reset_arm(struct attach_state *t, const struct service *target);
/* The look at the connections made since: at most a second, less once each listener is
 * judged; full: the whole second all the same (attachwatch.c samples across it). */
void attach_reset_wait(struct attach_state *t, int full);
/* A warning for each listener whose connections the program reset; all closed. */
void attach_reset_end(struct attach_state *t);

/* ---- attachtune.c: one socket, through a copy ---- */

#define ATTACH_NOTES (ST_O_COUNT + 2) /* (each option once, and the backlog twice) */
struct attach_note { /* a clamp, a refusal, a lowered backlog: said once the copy is closed */
	enum { N_REFUSED, N_CLAMPED, N_BACKLOG_CLAMPED, N_BACKLOG_LOWERED,
	       N_PATH,    /* the path taken cannot set it: why (static text), the other named */
	       N_NO_ITER  /* only the iterator sets it here, and it cannot be used (bpf_why) */
	} kind;
	int opt, err, protocol;
	long long want, got;
	const char *why;
};
struct attach_set { /* what became of one option (st_apply_one's outcome) */
	int opt;
	struct st_outcome out;
	char name[ST_NAME_MAX];
};
struct attach_tuned {
	char addr[64], peer[64];
	struct attach_set set[ST_O_COUNT];
	int nset;
	int backlog; /* the backlog was looked at: before, want, after */
	int backlog_before, backlog_want;
	long long backlog_after; /* a dry run: -1, said from the target's somaxconn once the
	                          * copy is closed */
	int quickack_outside;    /* a connection, --quickack: only the process re-arms it */
	struct attach_note notes[ATTACH_NOTES];
	int nnotes;
	int via;                 /* VIA_PIDFD or VIA_BPF: the path that set it */
	int notes_only;          /* nothing was set: its notes are said, no line */
	/* the pidfd path's: options left to the iterator (those only it sets, and those the
	 * kernel has no socket option for: ENOPROTOOPT, under --via auto) */
	int rest[ST_O_COUNT], nrest;
};
/* A note added to r (nothing past ATTACH_NOTES) */
void attach_note_add(struct attach_tuned *r, int kind, int opt, int err, long long want,
                     long long got, const char *why);
/* Tune socket s, held by pid as fd, through a copy taken from pidfd: copy, set, read back,
 * close.  0; 1 when fd no longer names that socket (closed, or the number reused); -1 with
 * errno when the copy was refused. */
int attach_tune(const struct attach_state *t, const struct svc_sock *s, int pidfd, int fd,
                struct attach_tuned *out);
/* ---- attachbpf.c: sockets through the TCP iterator (--via bpf, or auto) ---- */

struct attach_bpf {
	struct svc_sock s;
	int pid, fd;           /* its holder; pid -1: none this user may read (sock_diag's) */
	struct attach_tuned r; /* what became of it: the notes of what this path cannot set */
	struct it_sock it;
};
/* Whether the iterator can be used here (once per run; t->bpf_why says why not) */
int attach_bpf_ok(struct attach_state *t);
/* Socket s (held by pid as fd; pid -1: no holder read) queued for the iterator: only the
 * options opts[n] (the rest of a socket the pidfd path tuned), or with opts NULL every
 * option of the policy it takes, the others noted refused with the other path named */
void attach_bpf_queue(struct attach_state *t, const struct svc_sock *s, int pid, int fd,
                      const int *opts, int n);
/* The queued sockets of svc set by one iterator run in its network namespace, each said as
 * attach_say says a socket (via=bpf), then the queue emptied */
void attach_bpf_flush(struct attach_state *t, struct service *svc);
/* A socket neither path reaches: said (once a run, with both paths' needs), counted */
void attach_refuse_both(struct attach_state *t, const struct svc_sock *s, int pid,
                        const char *pidfd_why);

/* What attach_tune found, written: its notes on stderr (and as warnings), then its record. */
void attach_say(struct attach_state *t, const struct svc_sock *s, int pid, int fd,
                const struct attach_tuned *r);
/* A socket's record, pid fd addr event filled: an object of the document's "sockets" under
 * --json, else a line's own; attach_line_end writes the line (the library's format). */
struct rec *attach_line(struct attach_state *t, int pid, int fd, const char *event,
                        const char *addr);
void attach_line_end(struct attach_state *t, struct rec *r);
/* A warning's record, a line of the library's format: pid level=warn event=KIND fd addr
 * filled, the rest the caller's.  attach_warning_end writes it, on stderr when say (and
 * once for a kind said only once), and under --json as a member of the document's
 * "warnings" too (KIND as its kind, no level), then frees it. */
struct rec *attach_warning(struct attach_state *t, const char *kind, int pid, int fd,
                           const char *addr);
void attach_warning_end(struct attach_state *t, struct rec *w, const char *kind, int say);
/* A command run in pid's network namespace, as a fix prints it: as it is when that is ours,
 * else under nsenter. */
const char *attach_in_netns(int pid, const char *cmd, char *buf, size_t n);

#endif
