/* socktune watch: every TCP listener of the node (or of the PIDs and :PORTs given), in every
 * network namespace, sampled through NETLINK_SOCK_DIAG, and served as Prometheus metrics.
 * watchargs.c parses and helps; watchns.c finds the namespaces and reads their counters;
 * watch.c samples and runs the loop; watchid.c names a listener's service (comm, systemd
 * unit, container, pod); watchprom.c writes the text; watchhttp.c serves it.  Internal to
 * watchconn.c counts each listener's connections, spaced by what that costs.  Internal to
 * cli/watch/. */
#ifndef SOCKTUNE_WATCH_H
#define SOCKTUNE_WATCH_H

#include <stddef.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "cli.h"
#include "host/diag.h"

#define WATCH_MAX_NS 256         /* network namespaces followed */
#define WATCH_MAX_LISTENERS 4096 /* listeners (address and port in a namespace) followed */
#define WATCH_MAX_TARGETS 64
#define WATCH_INODES 8           /* sockets of one listener remembered (SO_REUSEPORT) */
#define WATCH_APPLY_NETNS 16     /* --apply-netns PATH given */

struct watch_args {
	const char *listen;   /* --listen ADDR:PORT (NULL: none) */
	const char *textfile; /* --textfile PATH */
	double interval;      /* --interval SECONDS: the listener samples */
	double every;         /* --every SECONDS: the textfile's rewrites */
	double seconds;       /* --seconds SECONDS: the run's length (0: until a signal) */
	double window;        /* --window SECONDS: the findings' window */
	int apply;            /* --apply: the socket-option cures applied, journalled */
	const char *journal;  /* --journal PATH (NULL: journal.h's default) */
	/* --apply-netns: the network namespaces --apply may change besides watch's own and the
	 * targets' (their inodes, from the files named), or all of the node's */
	unsigned long long apply_netns[WATCH_APPLY_NETNS];
	int napply_netns, apply_netns_all;
	int via, via_given;   /* --via pidfd|bpf|auto (enum via, via.h) */
	const char *targets[WATCH_MAX_TARGETS];
	int ntargets;
};

enum cli_status watch_parse(int argc, char **argv, void *args, FILE *msg); /* watch_args */
void watch_help(FILE *f);
int watch_main(void *args);

/* ---- watchid.c: who a listener serves ---- */

/* What names a service across its restarts: its process's comm, and from /proc/PID/cgroup
 * the systemd unit, the container and the Kubernetes pod ("" each when there is none). */
#define WATCH_UNIT_MAX 255 /* systemd's longest unit name (UNIT_NAME_MAX 256 with its NUL) */
struct watch_ident {
	char comm[32];
	char unit[WATCH_UNIT_MAX + 1];
	char container[72];
	char pod[40];
	char pod_name[64]; /* (the pod's hostname, its name unless the pod sets another) */
};
/* A cgroup path ("/system.slice/nginx.service", ".../docker-<64hex>.scope",
 * "/kubepods/burstable/pod<uid>/<64hex>") into unit, container and pod.  Pure. */
void watch_ident_from_cgroup(const char *path, struct watch_ident *id);
/* The identity of process pid: its comm and its cgroup's (v2's line, else systemd's); in a
 * pod, the pod's name too: the kubelet gives each of its containers an /etc/hostname that
 * holds it (read through /proc/PID/root: CAP_SYS_PTRACE for another user's process) */
void watch_ident_of(int pid, struct watch_ident *id);
/* Whether cgroup path own is rel or a cgroup below it ("/" holds every one).  Pure. */
int watch_cgroup_within(const char *own, const char *rel);
struct watch;
/* Whether process pid is one the operator named: a PID target, or in a cgroup target */
int watch_is_target(const struct watch *w, int pid);

/* ---- watchns.c: the namespaces ---- */

struct watch_ns {
	unsigned long long ino;
	int pid;            /* a process in it (0: ours, or found by file alone) */
	char file[128];     /* the /run/netns file it was found by, with no process this watch
	                     * may read in it ("" none): entered through that file */
	int nl;             /* its sock_diag socket */
	int seen;           /* found by the latest scan */
	long long overflows, drops; /* TcpExt ListenOverflows, ListenDrops now; -1 unreadable */
	long long w_start[3];       /* ListenOverflows, ListenDrops, TCPSynRetrans at the window's
	                             * start (-1 unknown) */
	long long somaxconn;        /* -2: not read yet */
	long long passive_opens;    /* Tcp PassiveOpens now (/proc/PID/net/snmp); -1 unreadable */
};

/* ---- watchfind.c: doctor's accept-queue rules over each window ---- */

#define WATCH_MAX_FINDINGS 256
/* Quiet windows in a row a finding takes to clear (while its fault recurs in any of the
 * last this many windows it holds); a flap doubles it */
#define WATCH_CLEAR_WINDOWS 6
struct watch_finding {
	int used;
	int holds;              /* found in the latest window, or not yet cleared: shown */
	char id[17];            /* stable: from kind, namespace, address and port */
	int rule;               /* its row of the findings' table (findings.h's DOC_RULES) */
	const char *kind;       /* that row's kind */
	int severity;
	unsigned long long ns_ino;
	int family;
	unsigned char addr[16];
	unsigned port;
	int absent, needed;     /* quiet windows so far, and those it takes to clear */
	int flaps;              /* times it came back soon after it cleared */
	double cleared_at;
};

/* ---- watch.c: the listeners ---- */

/* The quantiles of a listener's connections' RTTs exported (watchconn.c's table): q = num
 * / den, by nearest rank, so that each is one connection's */
#define WATCH_RTT_QS 4
struct watch_quantile {
	unsigned num, den;
	const char *label;
};
extern const struct watch_quantile watch_rtt_quantiles[WATCH_RTT_QS];

struct watch_listener {
	int used;
	unsigned long long ns_ino;
	int family;
	unsigned char addr[16];
	unsigned port;
	unsigned long long inodes[WATCH_INODES];
	unsigned long long cookies[WATCH_INODES]; /* (the same sockets' sock_diag cookies) */
	int ninodes;
	int want_ident;        /* a socket appeared whose holder is not looked up yet */
	int known;             /* its identity is settled: it is shown */
	int excluded;          /* not held by a PID target: followed, never shown */
	int ident_tries;       /* lookups that found no holder */
	int service_pid;       /* its service's process at the latest lookup (fixes only) */
	unsigned long long service_start; /* that process's start time: another process (a
	                                   * restart, pid reuse) makes the holder looked up again */
	struct watch_ident id;
	/* the latest sample: every socket of it summed (SO_REUSEPORT: the service's queue) */
	unsigned sockets, queue, backlog;
	uint32_t rb, tb;
	unsigned long long drops;
	/* the deepest queue since the last scrape, and since the last textfile */
	unsigned peak[2];
	int up;                /* seen in the latest sample */
	int gone_said[2];      /* gone: the scrape (0) and the file (1) said so once */
	/* over the findings' window: drops at its first sample, the deepest queue, samples
	 * (and those that saw a connection waiting) */
	unsigned long long w_drops0;
	unsigned w_peak, w_queued, w_samples;
	/* while a sample runs */
	unsigned s_sockets, s_queue, s_backlog;
	uint32_t s_rb, s_tb;
	unsigned long long s_drops;
	/* established connections at the latest connection sample (and while one runs) */
	unsigned long long conns, s_conns;
	int conns_known;
	int conn_round;        /* counted by the connection round under way */
	double conns_at;       /* when conns was counted */
	/* the path as its connections saw it at the same sample (watchconn.c): their smoothed
	 * RTTs ranked (rtt_n of them had one, rtt_ranked of those were ranked between the
	 * least and the most), lifetime segments sent and retransmitted, and their queues'
	 * memory (rmem_alloc, wmem_queued) summed */
	struct watch_path {
		uint32_t rtt_us[WATCH_RTT_QS];
		unsigned long long rtt_n, rtt_ranked, segs_out, retrans, rmem, wmem;
	} path;
	int doc_index;         /* its index in the window's record being judged, -1 none */
	unsigned long long cgroup_id; /* the cgroup its latest socket was made in (1: the root) */
	double overflow_seen;  /* the latest window that found clients waiting on an overflow */
};

/* ---- watchconn.c: the connections the Nagle rule reads ---- */

#define WATCH_MAX_CONNS 4096 /* connections kept with their tcp_info (past it: counted) */
struct watch_conn {
	struct watch_listener *l;
	struct diag_sock first, last; /* the sample before and the latest */
	double first_t, last_t;
	int samples;                  /* 2: seen by both */
};
/* The connections of the latest connection sample, at most WATCH_MAX_CONNS */
const struct watch_conn *watch_conns(int *n);

/* ---- watchapply.c: --apply ---- */

#define WATCH_MAX_APPLIED 256
struct watch_applied {  /* one socket of a listener that --apply changed, or tried to, or may
                         * not change: checked on every window after, forgotten with it */
	int used;
	unsigned long long ns_ino;
	int family;
	unsigned char addr[16];
	unsigned port;
	int opt, want;          /* the cure's option (ST_V_*) and value (findings.h's table) */
	int pid, fd;            /* its holder (pid 0: none found; -1: none readable, the
	                         * iterator's: by cookie) */
	unsigned long long inode, cookie;
	int via;                /* VIA_PIDFD, VIA_BPF: how it was changed, and is read */
	int set;                /* the value set (-1: nothing changed, none to watch) */
	int backed_off;         /* the socket has another value now: never applied again */
	int out_of_scope;       /* in a namespace outside --apply's scope: said, not applied */
	/* an option the connections inherit: the listener's connections when it was applied
	 * (sorted inodes), so that those accepted after it are known; whether they were found
	 * reset (said once) */
	unsigned long long *older;
	int nolder;
	int reset_said;
	unsigned long long judged; /* the connection sample judged last (w->conn_samples) */
	int held_rounds, blind_rounds; /* judged: rounds that read the cure held, that read none */
	int judge_done;            /* concluded (held, or no connection to read): judged no more */
	int checked, read, gone, now; /* the iterator's entries, this window: looked at, read,
	                               * not met (closed), the value read */
};

enum { WATCH_SCRAPE, WATCH_FILE };

struct watch {
	const struct watch_args *a;
	struct watch_ns ns[WATCH_MAX_NS];
	int nns;
	struct watch_listener l[WATCH_MAX_LISTENERS];
	int nl;
	int pids[WATCH_MAX_TARGETS], npids;
	/* cgroup targets: paths below the v2 mount, as /proc/PID/cgroup writes them; a
	 * listener is shown when a process in one of them or below holds it */
	char cgroups[WATCH_MAX_TARGETS][512];
	int ncgroups;
	unsigned ports[WATCH_MAX_TARGETS];
	int nports;
	/* what the sampling did, for the watch's own metrics */
	unsigned long long samples, dump_errors, scans, ident_scans;
	double ident_every;           /* seconds between holder lookups now (their cost) */
	double next_ident;            /* the next holder lookup, at the earliest */
	double sample_seconds;        /* summed wall time of the listener samples */
	unsigned long long l_sample_sockets; /* sockets the latest listener sample returned */
	/* the connection samples (watchconn.c): when the next is due, their spacing now */
	double next_conn, conn_every, conn_sample_seconds;
	double conn_sampled_at;       /* when the latest one ran (0: none yet) */
	unsigned long long conn_ns_ino; /* where the next round starts: its namespace, */
	int conn_from;                /* and the listener index in it */
	unsigned long long conn_rounds_partial; /* rounds that stopped at their budget */
	int conn_spacing_said;
	double started;               /* when the watch began */
	unsigned long long conn_samples, conn_sample_sockets; /* (sockets: in the latest) */
	unsigned long long ns_not_followed, listeners_not_followed; /* past the caps, now */
	int ns_cap_said, listener_cap_said;
	int ns_denied_said; /* processes whose namespace this user may not read: said once */
	int consumers;                /* 1 << WATCH_SCRAPE | 1 << WATCH_FILE: who reads */
	struct watch_finding find[WATCH_MAX_FINDINGS];
	unsigned long long findings_not_followed;
	int journal_fd;               /* --apply: the journal, open from the start */
	char journal_path[4096];
	struct watch_applied applied[WATCH_MAX_APPLIED];
	unsigned long long applied_changes, backoffs; /* for the metrics */
	int applied_full_said;
	int no_iter;                  /* the iterator: 0 not asked yet, 1 usable, 2 not (why) */
	char iter_why[400];
	/* --apply's scope: watch's own namespace, the PID targets' and --apply-netns's (a
	 * process of a PID or cgroup target puts its own in too, when its socket is changed) */
	unsigned long long apply_scope[1 + WATCH_MAX_TARGETS + WATCH_APPLY_NETNS];
	int napply_scope;
};

/* watchapply.c: the journal opened (its refusal said); 0, or -1 */
int watch_apply_open(struct watch *w);
/* The cure of finding f on listener l applied, when it is a socket option's, to each socket
 * of l (an SO_REUSEPORT group's every one) that it was not applied to before (nor backed off
 * from), when l's namespace is in --apply's scope (else said, once) */
void watch_apply(struct watch *w, const struct watch_finding *f, struct watch_listener *l);
/* Each value watch set read back: one that differs now was set by someone else, and watch
 * backs off (said once); a socket gone is forgotten (a restart's new one gets its cure); a
 * cured listener's connections accepted since, read (watch_hold_judge) */
void watch_apply_check(struct watch *w);
/* Whether entry a is a socket of listener l */
static inline int watch_applied_on(const struct watch_applied *a, const struct watch_listener *l)
{
	return a->ns_ino == l->ns_ino && a->port == l->port && a->family == l->family &&
	       memcmp(a->addr, l->addr, 16) == 0;
}

/* The journal line (a record, the caller's to free) of one change of option opt on a
 * socket of listener l: its finding, the values before and after, the holder (pid, fd; pid
 * -1: none readable, left out), inode, address, peer (NULL: a listener), the path (VIA_*)
 * and the socket's cookie (0: not known) */
struct rec *watch_apply_rec(const struct watch_finding *f, const struct watch_listener *l,
                            int opt, int before, int after, int pid, int fd,
                            unsigned long long ino, const char *addr, const char *peer, int via,
                            unsigned long long cookie);

/* ---- watchbpf.c: --apply through the TCP iterator ---- */

struct doc_rule;
/* Whether the iterator can be used here (asked once; w->iter_why says why not) */
int watch_bpf_ok(struct watch *w);
/* One socket for watch_bpf_change: in, the holder (pid -1: none read), inode, cookie,
 * family, address and peer ("" a listener); out, result (1 changed, 0 it held the value, -1
 * not: said) and the value read back after */
struct watch_bpf_item {
	int pid, fd;
	unsigned long long ino, cookie;
	int family;
	char addr[64], peer[64];
	int result, after;
};
/* cure's value set on it[n], sockets of listener l (or its connections), through two runs
 * of the iterator (the values before, then the change read back), each change journalled
 * first and said; the number changed */
int watch_bpf_change(struct watch *w, const struct watch_finding *f,
                     const struct watch_listener *l, struct watch_bpf_item *it, int n,
                     const struct doc_rule *cure);
/* Option opt of the sockets cookies[n] (families[n]) of namespace ns_ino, read by one run
 * (quiet: its line said only when it fails): values[k] (-1: not met, or not read); how many
 * were read, or -1 when the run failed */
int watch_bpf_read(struct watch *w, unsigned long long ns_ino, const unsigned long long *cookies,
                   const int *families, int n, int opt, int *values, int quiet);
/* The iterator's entries read, one run per namespace and option (checked, read, gone, now) */
void watch_bpf_check(struct watch *w);

/* watchhold.c: whether a cure on a listener reaches the connections it accepts since (an
 * option they inherit).  The connections it has now, remembered in a when it is applied: */
void watch_hold_remember(struct watch *w, const struct watch_listener *l, struct watch_applied *a);
/* On a window after, a still holding its value: the connections the latest connection sample
 * has that were accepted since, read (a bounded number a round, a bounded number of rounds);
 * one holding another value was reset by the application: said once, with the cures that
 * hold against it */
void watch_hold_judge(struct watch *w, struct watch_applied *a);
/* The cures whose listener's new connections are still being read (the SIGUSR1 line's
 * count: one that holds is judged a bounded number of rounds, then no more) */
int watch_apply_judging(const struct watch *w);

/* watchfind.c: at a window's start (the namespaces' counters), and at its end: the rules,
 * each finding's series and its log lines (appeared, cleared) */
void watch_window_start(struct watch *w);
void watch_findings(struct watch *w, double now);

/* watchconn.c: each listener's established connections counted, when the next round is
 * due (at most every 10 s, less often when one costs more than 0.2% of a core, never more
 * than WATCH_CONN_MAX_EVERY_S apart), at most WATCH_CONN_BUDGET connections a round, the
 * listeners in turn */
#define WATCH_CONN_MAX_EVERY_S 60.0
#define WATCH_CONN_BUDGET 2000
void watch_conn_sample(struct watch *w, double now);
/* Seconds since the listener counted longest ago was counted (since the start: none yet) */
double watch_conn_age(const struct watch *w, double now);

/* watchclose.c: each namespace's destroy notifications (host/diagclose.c), always on.
 * After a scan: a socket for each namespace new, closed for each gone */
void watch_close_sync(struct watch *w);
/* The sockets to poll now (none within READ_GAP_S of a read that found some: *wake then
 * brought forward to when the next read is due); after poll, those readable read, each
 * connection freed of a listener counted and put into its window's doc_closed */
int watch_close_fds(struct pollfd *pf, int max, double now, double *wake);
void watch_close_run(struct watch *w, const struct pollfd *pf, int n, double now);
/* Listener l's connections freed since watch followed it: 0, or -1 when its namespace's
 * notifications are not read (no sample) */
int watch_close_total(const struct watch *w, const struct watch_listener *l,
                      unsigned long long *total);
/* The times the kernel dropped notifications in namespace ino (0), -1 when they are not
 * read there; the notifications read, every namespace's */
int watch_close_overruns(unsigned long long ino, unsigned long long *overruns);
unsigned long long watch_close_notifications(void);
/* What the path rules read of listener l in the window's record: its doc_closed, the
 * initial window for its far peers (their route's, else 10) and the route, its namespace's
 * congestion controls and overruns; at the window's end the windows' aggregates start
 * again (the totals go on) */
struct doc_listener;
struct doc_ns;
void watch_close_fill(struct watch *w, const struct watch_listener *l, struct doc_listener *L,
                      struct doc_ns *ns);
void watch_close_window_end(struct watch *w);
void watch_close_end(void);

/* watchns.c: the namespaces of the targets (or of every process), added and dropped; 0 */
void watch_scan_ns(struct watch *w);
void watch_ns_counters(struct watch *w);
/* A sock_diag socket made in ns (by its process, or its file), or -errno */
int watch_ns_diag(const struct watch_ns *ns);
/* TcpExt counter name of ns (its process's /proc/PID/net/netstat, or read from inside it
 * when it was found by its file alone); -1 unreadable */
long long watch_ns_counter(const struct watch_ns *ns, const char *name);
void watch_ns_close(struct watch *w);

/* watchprom.c: the text, for consumer c (WATCH_SCRAPE, WATCH_FILE); its peaks start again
 * and the listeners it said were gone are let go once every consumer said so. */
char *watch_prometheus(struct watch *w, int c, size_t *len);

/* watchhttp.c: GET /metrics on --listen's address */
/* --listen's "PORT", ":PORT" (127.0.0.1's), "ADDR:PORT", "[ADDR6]:PORT" into an address; 0,
 * or -1 when it is none of them (watch_parse refuses it: status 2, before anything runs) */
int watch_http_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len);
int watch_http_open(const char *spec, char *err, size_t n); /* a listening socket, or -1 */
/* The pollfds the server wants (at most watch_http_max), their count */
#define WATCH_HTTP_CLIENTS 8
int watch_http_fds(int lfd, struct pollfd *pf, double now);
/* After poll: accept, read, answer, time out; render is called for each GET /metrics */
void watch_http_run(int lfd, const struct pollfd *pf, int n, double now, struct watch *w);
double watch_http_deadline(double now); /* the earliest client deadline, or now + 3600 */
void watch_http_close(int lfd);

#endif
