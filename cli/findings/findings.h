/* doctor's rules (findings.c, findings_queue.c) and how a finding is written (fixes.c): they
 * judge a window's record (struct shared_window, window.h: doctor's samples or watch's); attach's
 * watch applies the client-Nagle rule to numbers of its own.  Internal to cli/. */
#ifndef SOCKTUNE_FINDINGS_H
#define SOCKTUNE_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

struct shared_window;
struct doc_ns;
struct doc_listener;
struct rec;

/* ---- findings.c, findings_queue.c: the rules; fixes.c: how a finding is written ---- */

enum doc_severity { SEV_INFO, SEV_WARNING, SEV_CRITICAL };

#define DOC_MAX_FINDINGS 64
#define DOC_MAX_FIXES 5
#define DOC_FIX_PIDS 16 /* connection holders the evidence names */

struct doc_finding {
	const char *kind;
	enum doc_severity severity;
	const char *certainty; /* high, medium, low */
	int listener;          /* index, -1: the namespace */
	int pid;               /* the service's: the listener's holder whose parent is none */
	unsigned port;
	char summary[200];
	struct rec *evidence;  /* the numbers, typed (record.h's keys); freed by the next
	                        * doctor_findings on the same doc_findings */
	char fix[DOC_MAX_FIXES][4096]; /* each a command that runs as printed */
	int nfix;
	char note[1000];       /* what is not a command: why a fix is missing, what it costs */
};

struct doc_findings {
	struct doc_finding f[DOC_MAX_FINDINGS];
	int n, dropped; /* dropped: past DOC_MAX_FINDINGS */
};

void doctor_findings(const struct shared_window *d, struct doc_findings *out);
void doctor_findings_free(struct doc_findings *fs);
const char *doc_severity_name(enum doc_severity s);
/* fixes.c: shares of busy time, in percent: -1 when there was no busy time. */
double doc_share(uint64_t part, uint64_t busy);
/* doctor's status for its findings: 1 when one is a warning or critical, 0 when there are
 * none or all are information (a retransmit with no timeout among them, say). */
int doctor_status(const struct doc_findings *fs);
/* findings_queue.c: the accept queue's rules (overflow now, an earlier one, the cap) */
void doc_queue_findings(const struct shared_window *d, struct doc_findings *fs);
/* findings.c: the server's Nagle held by the client's delayed ACK (nagle-delayed-ack), on the
 * record's connections (watch runs it on its connection samples) */
void doc_nagle_findings(const struct shared_window *d, struct doc_findings *fs);
/* findings.c: the server's delayed ACK holding the client: requests written in two pieces
 * (delayed-ack-two-write) and a client's own Nagle (delayed-ack-client-nagle); watch runs
 * them on its connection samples too */
void doc_delack_findings(const struct shared_window *d, struct doc_findings *fs);
/* findings_memory.c: a buffer at the namespace's cap while data is dropped or waits to be
 * sent (buffer-clamped), and the buffers against the TCP memory limit (memory-exposure) */
void doc_memory_findings(const struct shared_window *d, struct doc_findings *fs);
/* A connection limited by the window or the send buffer: this share of its busy time ... */
#define LIMITED_SHARE 20.0
#define LIMITED_MIN_US 100000 /* ... over at least this much busy time */
/* The backlog the accept queue's findings cure with (watch --apply sets it) */
#define DOC_BACKLOG_CURE 4096

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
struct doc_finding *doc_add(struct doc_findings *fs, const char *kind, enum doc_severity sev,
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
