/* doctor's rules as one table (DOC_RULES, rules.c), their judges (findings.c,
 * findings_queue.c, findings_memory.c, findings_path.c) and how a finding is written (fixes.c): they judge a
 * window's record (struct shared_window, window.h: doctor's samples or watch's); attach's
 * watch applies the client-Nagle rule to numbers of its own.  Internal to cli/. */
#ifndef SOCKTUNE_FINDINGS_H
#define SOCKTUNE_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

struct shared_window;
struct doc_ns;
struct doc_listener;
struct rec;
struct doc_findings;

/* ---- rules.c: the findings, one row each ---- */

/* The backlog the accept queue's findings cure with (watch --apply sets it) */
#define DOC_BACKLOG_CURE 4096

/* Where a rule runs: on doctor's window, on each of watch's windows (watch has no
 * start commands, buffers' caps or retransmit counters), or both */
enum doc_where { DOC_IN_DOCTOR = 1, DOC_IN_WATCH = 2, DOC_IN_BOTH = 3 };
#define DOC_NO_CURE (-1) /* a finding no single option cures from outside */
/* How a cure's value is taken: the option set to it (the default), or raised to at least
 * it (DOC_AT_LEAST: a larger backlog is kept as it is) */
enum { DOC_AT_LEAST = 1 };

/* X(id, kind, judge, where, option, value, flags)
 *   kind    the finding's name in every output (doctor, watch's lines and metrics, the
 *           journal), stable: watch's finding ids are made from it
 *   judge   the function that finds it on a window; rows that one judge tells apart (an
 *           overflow of now or an earlier one's tail) sit together, and it runs once
 *   where   doctor, watch or both
 *   option, value, flags   the cure watch --apply sets on a live socket from outside: an
 *           option of the ST_VARIABLES table that sockcopy sets (the backlog, an int socket
 *           option: host/sockcopy.h's sockcopy_takes), journalled by the option's key
 *           (st_opt_key: "backlog", "nodelay"), the only names revert takes back;
 *           DOC_NO_CURE: none.
 *           An option the accepted connections inherit is set on the listener's
 *           connections too, and the listener's new ones are read to see that it holds.
 * The order of the rows is the order the findings are reported in. */
#define DOC_RULES(X)                                                                          \
	X(ACCEPT_QUEUE_OVERFLOW, "accept-queue-overflow", doc_judge_accept_queue, DOC_IN_BOTH,   \
	  ST_V_BACKLOG, DOC_BACKLOG_CURE, DOC_AT_LEAST)                                          \
	X(EARLIER_OVERFLOW, "earlier-overflow", doc_judge_accept_queue, DOC_IN_BOTH,             \
	  DOC_NO_CURE, 0, 0)                                                                     \
	X(BACKLOG_CLAMPED, "backlog-clamped", doc_judge_backlog_clamped, DOC_IN_BOTH,            \
	  DOC_NO_CURE, 0, 0)                                                                     \
	X(NAGLE_DELAYED_ACK, "nagle-delayed-ack", doc_judge_nagle, DOC_IN_BOTH,                  \
	  ST_V_NODELAY, 1, 0)                                                                    \
	X(DELAYED_ACK_TWO_WRITE, "delayed-ack-two-write", doc_judge_two_write, DOC_IN_BOTH,      \
	  DOC_NO_CURE, 0, 0)                                                                     \
	X(DELAYED_ACK_CLIENT_NAGLE, "delayed-ack-client-nagle", doc_judge_client_nagle,          \
	  DOC_IN_BOTH, DOC_NO_CURE, 0, 0)                                                        \
	X(SLOW_START_LIMITED, "slow-start-limited", doc_judge_slow_start, DOC_IN_BOTH,           \
	  DOC_NO_CURE, 0, 0)                                                                     \
	X(LOSS_LIMITED, "loss-limited", doc_judge_loss, DOC_IN_BOTH, DOC_NO_CURE, 0, 0)          \
	X(RECEIVE_BUFFER_LIMITED, "receive-buffer-limited", doc_judge_rcvbuf, DOC_IN_BOTH,       \
	  DOC_NO_CURE, 0, 0)                                                                     \
	X(RECEIVE_WINDOW_LIMITED, "receive-window-limited", doc_judge_rwnd_limited,              \
	  DOC_IN_DOCTOR, DOC_NO_CURE, 0, 0)                                                      \
	X(SEND_BUFFER_LIMITED, "send-buffer-limited", doc_judge_sndbuf_limited, DOC_IN_DOCTOR,   \
	  DOC_NO_CURE, 0, 0)                                                                     \
	X(RETRANSMITS, "retransmits", doc_judge_retransmits, DOC_IN_DOCTOR, DOC_NO_CURE, 0, 0)   \
	X(BUFFER_CLAMPED, "buffer-clamped", doc_judge_buffer_clamped, DOC_IN_DOCTOR,             \
	  DOC_NO_CURE, 0, 0)                                                                     \
	X(MEMORY_EXPOSURE, "memory-exposure", doc_judge_memory_exposure, DOC_IN_DOCTOR,          \
	  DOC_NO_CURE, 0, 0)

enum doc_rule_id {
#define DOC_RULE_ID(id, ...) DOC_R_##id,
	DOC_RULES(DOC_RULE_ID)
#undef DOC_RULE_ID
	DOC_R_COUNT
};

/* A judge: the findings of its rules on window d, added to fs (doc_add) */
typedef void doc_judge(const struct shared_window *d, struct doc_findings *fs);
#define DOC_JUDGE_DECL(id, kind, judge, ...) doc_judge judge;
DOC_RULES(DOC_JUDGE_DECL)
#undef DOC_JUDGE_DECL

struct doc_rule {
	const char *kind;
	doc_judge *judge;
	unsigned where;  /* enum doc_where */
	int option;      /* the cure's (ST_V_*), or DOC_NO_CURE */
	int value;
	unsigned flags;  /* DOC_AT_LEAST */
};
extern const struct doc_rule doc_rules[DOC_R_COUNT];

/* The rules that run where (DOC_IN_DOCTOR, DOC_IN_WATCH), in the table's order, on window
 * d: out's findings before are freed, the new ones are in it */
void doc_judge_all(const struct shared_window *d, unsigned where, struct doc_findings *out);
/* The option whose key (st_opt_key: the journal's "option") is key, when a rule's cure is
 * that option; -1 for any other name (an option no cure sets, a label, a typo): revert
 * takes back only what watch --apply may have set */
int doc_cure_option(const char *key);
/* The keys of the cures' options, once each in the table's order: "backlog, nodelay" */
void doc_cure_keys(char *out, size_t n);

/* ---- findings.c, findings_queue.c, findings_memory.c: the judges; fixes.c: how a
 * finding is written ---- */

enum doc_severity { SEV_INFO, SEV_WARNING, SEV_CRITICAL };

#define DOC_MAX_FINDINGS 64
#define DOC_MAX_FIXES 5
#define DOC_FIX_PIDS 16 /* connection holders the evidence names */

struct doc_finding {
	int rule;              /* its row of DOC_RULES (enum doc_rule_id) */
	const char *kind;      /* that row's kind (doc_judge_all sets it) */
	enum doc_severity severity;
	const char *certainty; /* high, medium, low */
	int listener;          /* index, -1: the namespace */
	int pid;               /* the service's: the listener's holder whose parent is none */
	unsigned port;
	char summary[200];
	struct rec *evidence;  /* the numbers, typed (record.h's keys); freed by the next
	                        * doc_judge_all on the same doc_findings */
	char fix[DOC_MAX_FIXES][4096]; /* each a command that runs as printed */
	int nfix;
	char note[1000];       /* what is not a command: why a fix is missing, what it costs */
};

struct doc_findings {
	struct doc_finding f[DOC_MAX_FINDINGS];
	int n, dropped; /* dropped: past DOC_MAX_FINDINGS */
};

void doctor_findings_free(struct doc_findings *fs);
const char *doc_severity_name(enum doc_severity s);
/* fixes.c: shares of busy time, in percent: -1 when there was no busy time. */
double doc_share(uint64_t part, uint64_t busy);
/* doctor's status for its findings: 1 when one is a warning or critical, 0 when there are
 * none or all are information (a retransmit with no timeout among them, say). */
int doctor_status(const struct doc_findings *fs);
/* A connection limited by the window or the send buffer: this share of its busy time ... */
#define LIMITED_SHARE 20.0
/* ... over at least this much busy time: a reader off the CPU for a tenth of a second (a
 * loaded machine's scheduler) is not a slow reader */
#define LIMITED_MIN_US 500000
/* One connection's numbers over an interval, as the client-Nagle rule reads them (tcp_info's
 * counters at two moments, or since the connection began). */
struct doc_exchanges {
	uint64_t segs_in, segs_out;   /* data segments received and sent */
	uint64_t acks_out;            /* segments sent without data: the server's own ACKs */
	uint64_t bytes_in, bytes_out; /* bytes received and sent */
	uint32_t ato_us;              /* the largest delayed-ACK timeout seen (tcpi_ato) */
	uint32_t rcv_mss;             /* tcpi_rcv_mss */
	double seconds;               /* the interval */
};
/* 1 when the numbers show a client's Nagle held by this server's delayed ACK: small segments
 * each way, about as many in as out, the server's ACK timeout at its 40 ms cap and its own
 * ACKs going out alone at that timer's pace (12 to 60 a second).  The stall that
 * TCP_NODELAY on the server brings to a client that writes twice per exchange with Nagle
 * on (MQTT QoS 1); 0 otherwise.  Pure: numbers in, verdict out. */
int doc_client_nagle_stall(const struct doc_exchanges *x);

/* fixes.c */
/* A finding of rule (enum doc_rule_id) on listener l (-1: the namespace); NULL past
 * DOC_MAX_FINDINGS (counted) */
struct doc_finding *doc_add(struct doc_findings *fs, int rule, enum doc_severity sev,
                            const char *certainty, const struct shared_window *d, int l);
void doc_fix(struct doc_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void doc_note(struct doc_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "nsenter --net=/proc/PID/ns/net " when listener l's namespace is not ours, else "" */
void doc_in_ns(const struct shared_window *d, int l, char *out, size_t n);
/* flags applied to listener l's service now (socktune attach, naming the pids that hold the
 * listener and, with connections, those that hold its connections), and at its next start
 * (the wrapper, or its attach mode for a program LD_PRELOAD does not reach) */
void doc_fix_flags(struct doc_finding *f, const struct shared_window *d, int l, const char *flags,
                   int connections);
void doc_fix_live(struct doc_finding *f, const struct shared_window *d, int l, const char *flags,
                  int connections);
void doc_fix_next_start(struct doc_finding *f, const struct shared_window *d, int l,
                        const char *flags);
/* The cgroup mode's two forms for listener l: attach --cgroup for the running service (the
 * connections it makes from now on: DOC_CG_NOW; not where the listener was made in the root
 * cgroup, the whole host: said), socktune --cgroup at its next start (every one from the
 * first: DOC_CG_NEXT) */
enum { DOC_CG_NOW = 1, DOC_CG_NEXT = 2 };
void doc_fix_cgroup(struct doc_finding *f, const struct shared_window *d, int l,
                    const char *flags, int forms);
/* The cures of a stall on the server's delayed ACK: --delack-max, quick-ack, the route's */
void doc_fix_delack(struct doc_finding *f, const struct shared_window *d, int l);
/* The cures of the server's Nagle: --nodelay.  overridden: the program sets TCP_NODELAY 0 on
 * each connection itself (its listener holds 1), so only what holds against its own call
 * is printed.  delack: the client's requests wait for the server's delayed ACK too (1: its
 * timer capped already, quick-ack is what is left; 2: at its 40 ms cap, --delack-max too). */
void doc_fix_nagle(struct doc_finding *f, const struct shared_window *d, int l, int overridden,
                   int delack);
void doc_listener_evidence(struct doc_finding *f, const struct shared_window *d, int l);
/* listener L's backlog group (app: what it asked, when known; effective: in force) */
void doc_backlog(struct rec *parent, const struct doc_listener *L);
/* counter k's change (C_*) into the evidence under its TcpExt name, null when unknown */
void doc_counter(struct doc_finding *f, const struct doc_ns *ns, int k);

#endif
