/* What the parts of the socktune command share: the parsed command line, the statuses its
 * parsers return, and the host, verdict and memory records of socktune check.  Internal to
 * cli/; the library never sees it. */
#ifndef SOCKTUNE_CLI_H
#define SOCKTUNE_CLI_H

#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/socket.h>

#include "socktune.h"
#include "socktune_apply.h"
#include "socktune_kernel.h"
#include "socktune_stats.h"

/* Where make install puts the library, seen from the command's directory (the Makefile sets
 * it from LIBDIR): run.c looks there after the command's own directory. */
#ifndef ST_LIBDIR_FROM_BIN
#define ST_LIBDIR_FROM_BIN "../lib"
#endif

#define EXIT_USAGE 2 /* bad option or value, or --strict refused the program */
/* The target is not there: no such process, no listener on the port (attach, doctor), no
 * such file (stats); nothing was looked at. */
#define EXIT_NOT_FOUND 3

/* ---- args.c: the command line ---- */

/* What a parser tells main: go on; print the help or the version (status 0); or stop with
 * EXIT_USAGE, its one-line message written.  No parser exits: main decides. */
enum cli_status { CLI_GO, CLI_HELP, CLI_VERSION, CLI_BAD };

#define CLI_MAX_ROUTES 8 /* check --route, each a lookup */
#define CLI_MAX_PEERS 16 /* --peer PREFIX, each a few instructions of the sock_ops program */

/* --peer PREFIX: an IPv4 or IPv6 prefix, the address in network order */
struct cli_peer {
	int family; /* AF_INET, AF_INET6 */
	unsigned char addr[16];
	int len;    /* the prefix length in bits */
};

struct cli {
	int check, json, strict;
	int attach, connections, follow; /* socktune attach [--connections] [--follow] ... */
	int via, via_given;              /* attach --via pidfd|bpf|auto (enum via, via.h) */
	int supervise;                   /* socktune --attach PROGRAM (supervise.c) */
	int cgroup;                      /* socktune --cgroup PROGRAM (cgroup/run.c) */
	int check_cgroup;                /* socktune check --cgroup: the cgroup mode's policy judged */
	const char *cgroup_path;         /* --cgroup-path PATH */
	int cgroup_root;                 /* attach --cgroup --cgroup-root: the whole host allowed */
	struct cli_peer peer[CLI_MAX_PEERS]; /* --peer PREFIX... (the cgroup modes) */
	int npeers;
	int print_library;               /* socktune --print-library */
	const char *route[CLI_MAX_ROUTES]; /* check --route ADDR: IPv4 or IPv6 literals */
	int nroutes;
	char **program;                 /* argv of the program (run mode) */
	const char *given[ST_V_COUNT]; /* value from the command line, NULL if not given */
	/* A flag followed by a boolean word that became the program (--nodelay 1 PROGRAM...):
	 * the flag as given and the word; run.c refuses it when no such program exists. */
	int flag_at;
	const char *flag_opt, *flag_word;
};

void run_help(FILE *f); /* socktune --help (runhelp.c) */
/* The wrapper's command line, and check's and attach's (policyargs.c sets c->check or
 * c->attach first; argv[0] is the command or the subcommand, never read). */
enum cli_status parse_args(int argc, char **argv, struct cli *c, FILE *msg);
enum cli_status flag_word_error(const struct cli *c, FILE *msg);
enum cli_status build_policy(const struct cli *c, struct st_policy *p, FILE *msg);

/* check and attach (policyargs.c): their command line and the policy it makes. */
struct policy_args {
	struct cli c;
	struct st_policy p;
};
enum cli_status check_parse(int argc, char **argv, void *args, FILE *msg);
int check_run(void *args);
enum cli_status attach_parse(int argc, char **argv, void *args, FILE *msg);
int attach_run(void *args);

/* ---- usage.c: what every subcommand's parser reaches without the wrapper's ---- */

/* One line, "socktune: " and the message, on f.  Returns CLI_BAD, so that a parser says
 * `return usage_error(msg, ...)`. */
enum cli_status usage_error(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether argv[*i] is the option name ("--seconds") with a value: 1 with *val "V" for
 * "--seconds=V", or for "--seconds V" the next word (*i moved onto it; NULL when there is
 * none); 0 when argv[*i] is another word (nothing moved).  Every parser reads its options'
 * values through it, so both forms are taken alike everywhere. */
int opt_value(int argc, char **argv, int *i, const char *name, const char **val);
/* The status of a parser's r that is not CLI_GO: --help (help printed) and --version 0,
 * else EXIT_USAGE (the parser said why). */
int exit_status(enum cli_status r, void (*help)(FILE *f));
/* Descriptors 0-2 that are closed opened on /dev/null (close-on-exec). */
void stdio_fill(void);

/* ---- target.c: PID, :PORT or CGROUP, the words that name what a subcommand looks at ---- */

enum target_kind { TARGET_PID = 1, TARGET_PORT = 2, TARGET_CGROUP = 4 };
struct target {
	enum target_kind kind; /* by the word's shape, also when it is refused */
	const char *word;
	int pid;               /* TARGET_PID: 1 to INT_MAX */
	unsigned port;         /* TARGET_PORT: 1 to 65535 */
};
/* word read into t: ":PORT" a port, a word with a '/' a cgroup (the word itself, a path),
 * else a pid.  0, or -1 when it is not one of its kind or its kind is not one of takes
 * (TARGET_* or'ed): the caller says why, in its own words. */
int parse_target(const char *word, unsigned takes, struct target *t);

/* ---- stop.c: SIGINT and SIGTERM end a loop (doctor, attach --follow, stats --watch) ---- */

/* The signal that asked for the end (0: none yet); the handler is installed by
 * stop_on_signals, and a second signal ends the command at once. */
extern volatile sig_atomic_t stop_signal;
void stop_on_signals(void);
/* The same, but a call that is waiting (EINTR) returns at the first signal, not restarted:
 * for a loop whose calls may wait on another party for ever (stats --watch). */
void stop_on_signals_now(void);
const char *stop_name(void); /* "SIGINT" or "SIGTERM" */
/* status when no signal came; else the command ends now by that signal (end_by_signal).
 * main's last word. */
int stop_end(int status);
/* This process ends now by signal sig, as if it had not caught it, so that its parent sees
 * the signal and a shell the status 128 + its number: its output flushed, its disposition
 * the default, unblocked, raised; no core of its own (what raised it is not a fault of
 * ours).  128 + sig should the raise return. */
int end_by_signal(int sig);

/* ---- child.c: a wrapper's program as its child (--attach, --cgroup) ---- */

/* The signals a wrapper blocks and waits for: those it forwards to the program (every one
 * that can be caught and is not a fault's) and SIGCHLD. */
void child_sigset(sigset_t *set);
/* 1 when signal info is dealt with here and goes to no one (the terminal's, which reached
 * the program already, or our own); 0: pass it on (child_sig_pass) to the program, or to
 * what it left. */
int child_sig_done(const siginfo_t *info, pid_t child, int program_alive);
void child_sig_pass(const siginfo_t *info, pid_t to); /* as it came: sigqueue keeps its value */
/* The wrapper's own status as the program's (waitpid's status): its exit code returned, or
 * its signal raised here (no core of ours), 128 + it should that return. */
int child_status(int status);

/* ---- help.c: how each subcommand's --help is laid out ---- */

/* One option: head ("--name ARG") in its column, text wrapped beside it, then tail (NULL:
 * none) on a line of its own. */
void help_entry(FILE *f, const char *head, const char *text, const char *tail);
/* The same without tail, the text from column at (the top-level help's subcommands) */
void help_wrapped(FILE *f, int at, const char *head, const char *text);
/* The options of the ST_VARIABLES table that takes(id) says the subcommand takes (NULL:
 * all), each with its variable and default, and how flags are written. */
void help_policy(FILE *f, int (*takes)(int id));

/* ---- run.c, inspect.c: socktune PROGRAM ---- */

int run_main(const struct cli *c, const struct st_policy *p, const char *argv0);
int print_library(const char *argv0); /* the library run_main would preload, on stdout */
/* 1, with the one line said, when the congestion control asked for is missing here. */
int congestion_missing(const struct cli *c, const struct st_policy *p);

/* What inspect_program finds in the file: each a reason LD_PRELOAD does not reach it. */
enum { P_STATIC = 1, P_GO = 2, P_SETID = 4, P_CAPS = 8 };
int resolve_program(const char *name, char *out);
int path_lookup(const char *name, const char *path, char *out); /* path: a PATH value */
unsigned inspect_program(const char *path, char *judged, int depth);

/* ---- probe.c, hostinfo.c, check.c, report.c: socktune check ---- */

int probe_socket(void);
void probe_close(int fd);
int probe_set(int fd, int level, int opt, const void *val, socklen_t len);
int probe_get(int fd, int level, int opt, void *val, socklen_t *len);
/* The same two for the apply step (common/apply.c): check's probe, attach's copies. */
extern const struct st_sockops cli_raw_ops;
int probe_set_int(int fd, int level, int opt, int v);
int probe_get_int(int fd, int level, int opt, long long *out);
int probe_backlog(long long want, long long *out);

/* ---- sockcopy.c: one value of another process's socket, through a pidfd_getfd copy ----
 * A value is an option of the ST_VARIABLES table (ST_V_*): a listener's backlog (listen()
 * again on the copy), or an int socket option (on an IPv6 socket its IPv6 one: IPV6_TCLASS
 * for IP_TOS), a flag read as 0 or 1. */

/* Whether sockcopy sets option opt on a live socket, and reads back what it set: the
 * backlog, or an int option that means something after bind() (not a name, not a buffer,
 * which reads back twice what was set, not an outgoing connection's alone) */
static inline int sockcopy_takes(int opt)
{
	if (opt == ST_V_BACKLOG)
		return 1;
	return opt >= 0 && opt < ST_V_COUNT && st_is_sockopt(opt) &&
	       !(st_sockopts[opt].flags &
	         (ST_O_NAME | ST_O_BUFFER | ST_O_BEFORE_BIND | ST_O_CLIENT_ONLY));
}
/* Whether the connections a listener accepts copy option opt from it (the kernel copies
 * TCP_NODELAY, TCP_USER_TIMEOUT, ... at accept; not SO_PRIORITY, not the backlog): a value
 * set on a listener is on its connections accepted since too */
static inline int sockcopy_inherited(int opt)
{
	return opt != ST_V_BACKLOG && sockcopy_takes(opt) &&
	       !(st_sockopts[opt].flags & (ST_O_EACH_CONN | ST_O_LISTENER_ONLY));
}
/* A copy of pid's fd, checked to be the socket of inode ino (0: any socket); -1 with errno
 * (ESTALE: the number names another file now; EPERM: no ptrace access). */
int sockcopy_open(int pid, int fd, unsigned long long ino);
/* Option opt's value on the copy; -1: not readable (EINVAL: not an option sockcopy takes) */
int sockcopy_get(int copy, int opt);
int sockcopy_set(int copy, int opt, int v); /* 0, or -1 with errno */
/* Copy, read, close: the value, or -1 */
int sockcopy_read(int pid, int fd, unsigned long long ino, int opt);
/* pid's start time (/proc/PID/stat field 22, clock ticks after boot); 0: not readable */
unsigned long long sockcopy_start_of(int pid);
/* sockcopy_open, only from the process that started at start (a pid taken by another
 * process since: -1, errno ESRCH, as one gone) */
int sockcopy_open_proc(int pid, unsigned long long start, int fd, unsigned long long ino);

struct host_sysctl {
	const char *name;
	int words; /* 0: one number, 3: three numbers, -1: a list of names */
};
#define N_SYSCTL 12
extern const struct host_sysctl host_sysctls[];

struct host {
	char val[N_SYSCTL][512]; /* "" when unreadable */
	int cap_net_admin;       /* 1, 0, or -1 when unknown */
	/* TCP_DELACK_MAX_US, TCP_RTO_MIN_US: 1, 0 (ENOPROTOOPT: before Linux 6.15), -1 unknown */
	int delack_max_us, rto_min_us;
	char us_probe_err[64];   /* why they are unknown */
	long long jiffy_us, hz;  /* what they are rounded up to; 0 when unknown */
	struct rlimit nofile;
	long page;
};

void read_host(struct host *h);
const char *host_get(const struct host *h, const char *name);
long long host_num(const struct host *h, const char *name, int word);

/* In this order: up to V_UNCHECKED a value takes effect in full. */
enum verdict_status { V_OK, V_NOTE, V_UNCHECKED, V_CLAMPED, V_FALLBACK, V_IGNORED, V_FAILED };
#define V_IN_FULL(s) ((s) <= V_UNCHECKED)

struct verdict {
	int id;
	enum verdict_status status;
	const char *value;           /* as configured */
	int numeric;                 /* want/effective below are meaningful */
	long long want, effective;
	int measured;                /* effective was read back from a probe socket */
	int doubled;                 /* the kernel reports twice the request */
	char got_name[ST_NAME_MAX];  /* a name option: the name read back, if measured */
	char why[320];
	char fix[200];
};

struct memory {
	long long rcv, snd; /* per connection, bytes */
	int rcv_set, snd_set;
	long long nofile;   /* -1: unlimited */
	long long tcp_mem_pages, page;
};

/* routepath.c: what decides a connection's start with a --route address, one entry per
 * metric (PATH_*): the route's value, the kernel's without it, and under check --cgroup what
 * the cgroup mode's program sets and whether that is what the connection gets. */
enum { PATH_INITCWND, PATH_INITRWND, PATH_CONGCTL, PATH_RTO_MIN, PATH_COUNT };
struct path_value {
	int set, locked;         /* the route has it; with its lock bit */
	long long num;           /* initcwnd, initrwnd: segments; rto_min: us */
	char name[ST_NAME_MAX];  /* congctl */
	long long kernel_num;    /* without the route's: initrwnd in bytes, at most */
	char kernel_name[ST_NAME_MAX];
	int cg;                  /* the program sets it (check --cgroup and the option) */
	long long cg_num;
	char cg_name[ST_NAME_MAX];
	int wins;                /* with cg: a connection with addr gets the program's */
};
struct route_path {
	int cgroup;              /* judged for check --cgroup */
	int peer_match;          /* addr is in a --peer prefix (1 without --peer) */
	char scope[600];         /* the program's connections, in words */
	char peers[400];         /* --peer's prefixes ("" none) */
	struct path_value v[PATH_COUNT];
};

/* route.c: the route the kernel would send to addr by, and its fix when it lacks quickack. */
struct route_result {
	const char *addr;  /* as given */
	int found;         /* route is the kernel's answer; else error says why */
	int quickack;      /* it carries quickack 1 */
	int fixable;       /* without: fix is an `ip route change`; else why there is none */
	struct st_route route;
	char spec[400];    /* the route in ip's words */
	char fix[600];
	char error[160];
	struct route_path path; /* routepath.c's, once found */
};
int route_lookup(const char *addr, struct route_result *out);

/* Everything check reports. */
struct rec;
/* cgmode.c: whether the cgroup mode can run here */
struct cgmode {
	int usable;
	char mount[1024];   /* "" none */
	int privileged;     /* 1, 0, -1 unknown */
	int loads;          /* 1, 0, -1 not tried (no cgroup v2) */
	char why[320], fix[200];
};
struct say; /* checksay.h */
void cgmode_read(const char *path, struct cgmode *m);
void cgmode_say(struct say *s, const struct cgmode *m);
/* routepath.c: r's path metrics judged (c: --cgroup and --peer; p: the policy; h: the
 * host's defaults), and said under r's object of the routes */
void route_path_judge(struct route_result *r, const struct cli *c, const struct st_policy *p,
                      const struct host *h);
void route_path_say(struct say *s, const struct route_path *rp, const char *addr);

struct report {
	const struct host *h;
	const struct cgmode *cg;
	const struct verdict *v;
	int n, not_full;
	const struct memory *m;
	const struct route_result *routes;
	int nroutes;
};

int check_main(const struct cli *c, const struct st_policy *p);
void check_help(FILE *f);
int check_takes(int id); /* the policy options check takes (only --cgroup's: with --cgroup) */

/* ---- attach.c, attachtune.c, service.c: socktune attach (attach.h) ---- */

/* (Linux 5.3 and 5.6; older headers lack the numbers) */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
struct attach_args {
	int json, connections, follow;
	int via; /* enum via (via.h) */
	char **targets; /* PIDs and :PORTs, NULL-terminated */
};
int attach_main(const struct attach_args *a, const struct st_policy *p);
/* attachargs.c: attach's --help; whether it takes policy option id (the others cannot
 * reach a running server's sockets from outside); and the refusal of a command line that
 * would apply nothing (CLI_BAD, the reason and what to add said on msg). */
void attach_help(FILE *f);
int attach_takes(int id);
enum cli_status attach_check(const struct cli *c, const struct st_policy *p, FILE *msg);
/* A sysctl of pid's network namespace (read by a child that joins it when it is not ours),
 * -1 when it cannot be read (host/nssysctl.c). */
long long target_sysctl(int pid, const char *name);

/* ---- supervise.c: socktune --attach PROGRAM: the program as a child, tuned from outside ---- */
int supervise_main(const struct cli *c, const struct st_policy *p);
void memory_exposure(const struct host *h, const struct verdict *v, int n, struct memory *m);
void say_report(const struct report *r, int json);

/* ---- outfile.c: a file replaced whole (stats --output, watch --textfile) ---- */

/* Replace path with the n bytes of data: a new file in the same directory, written, fsynced
 * and renamed over path; an existing path that is not a regular file, or is another user's,
 * is refused.  0, or -1
 * with a message in err and nothing left behind. */
int write_atomic(const char *path, const char *data, size_t n, char *err, size_t errlen);

/* ---- complete.c: socktune --list-options [SUBCOMMAND], for the shell's completion ---- */
int list_options(FILE *out, const char *sub);

/* ---- stats.c, statsview.c, statsprom.c: socktune stats ---- */

enum stats_format { STATS_TABLE, STATS_JSON, STATS_PROMETHEUS };

struct stats_args {
	enum stats_format format;
	long long every, times; /* --watch, --count; 0: not given */
	const char *output;     /* --output PATH (prometheus): replaced atomically */
	const char **files; /* as many as given (no cap): argv's */
	int nfiles;
};

enum cli_status stats_parse(int argc, char **argv, void *args, FILE *msg); /* stats_args */
int stats_main(void *args);
void stats_help(FILE *f);

/* One stats file as read: the snapshot, the live counters when they could be read, which of
 * the two f points at and why, and the netns counters now. */
struct stats_source {
	int live;     /* 1: read from the process now */
	int64_t from; /* that process */
	double age;   /* snapshot: seconds since it was written, -1 unknown */
	char why[96]; /* snapshot: why not live */
};
struct stats_netns {
	int same; /* the reader is in the writer's network namespace */
	long long overflows, drops;
};
struct stats_view {
	struct st_stats_file snap, live;
	const struct st_stats_file *f;
	struct stats_source src;
	struct stats_netns ns;
	/* The accept queue of each slot's listener now, from sock_diag in the process's network
	 * namespace (-1: not found there); kernel 0 with kernel_why saying why it was not read. */
	int kernel;
	char kernel_why[128];
	int32_t queue_now[ST_STATS_LISTENERS];
	char error[512]; /* why it could not be read */
};
/* 0; EXIT_NOT_FOUND when there is no such file; or 1 (unreadable, not a stats file,
 * another version); a message on stderr for both. */
int stats_view_load(const char *path, struct stats_view *v);
/* The table of one file on out (stats_view_load's status). */
int stats_table(FILE *out, const char *path);
/* What a file of this mode is when it is not a regular file ("a FIFO"), else NULL. */
const char *stats_not_regular(mode_t mode);
int stats_running(const struct st_stats_file *f);
/* A slot's accept queue now: the kernel's (*from_kernel 1), else the file's last sample */
int stats_queue_now(const struct stats_view *v, int slot, int *from_kernel);
long long stats_delta(long long now, long long start); /* -1 when either is unknown */
/* The inode of a netns as the file has it ("net:[4026531833]"), -1 when not of that form. */
long long stats_netns_inode(const char *netns);
/* --json: one document of n files (status[i]: stats_view_load's), written on one line for
 * --watch; nothing readable, the error object alone.  Returns the run's status: 0; 1 when a
 * file could not be read; EXIT_NOT_FOUND when none exists. */
int stats_json(FILE *out, const char *const *paths, struct stats_view *const *views,
               const int *status, int n, int one_line);

/* The Prometheus text format of n files; views[i] NULL: paths[i] could not be read. */
void stats_prometheus(FILE *out, const char *const *paths, struct stats_view *const *views,
                      int n);


/* ---- pass.c: the wrappers' listener pass over their family (the program and what it
 * starts or leaves), the attach mode's (attach/supervise.c) and the cgroup wrapper's
 * (--backlog, cgroup/run.c); made of attach/'s parts, at the top for both ---- */

#define ATTACH_PASS_MS 20 /* a pass every 20 ms: connections that come before a new
                           * listener's first pass get its old values */
struct attach_pass;
/* The pass state for p (backlog_only: the backlog options and --ports alone, the rest being
 * a sock_ops program's); MODE names the wrapper in its lines ("--attach").  NULL: no memory. */
struct attach_pass *attach_pass_open(const struct st_policy *p, const char *mode,
                                     int backlog_only);
/* One pass: each new listener of the family tuned, its line said (on stderr, in one write). */
void attach_pass_run(struct attach_pass *ap, int child);
/* Where the wrapper's own lines go, to be said with the pass's (attach_pass_flush). */
FILE *attach_pass_say(struct attach_pass *ap);
void attach_pass_flush(struct attach_pass *ap);
/* What is pending said, everything closed (NULL: nothing). */
void attach_pass_close(struct attach_pass *ap);

#endif
