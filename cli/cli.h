/* What the parts of the socktune command share: the parsed command line, the statuses its
 * parsers return, and the host, verdict and memory records of socktune check.  Internal to
 * cli/; the library never sees it. */
#ifndef SOCKTUNE_CLI_H
#define SOCKTUNE_CLI_H

#include <stdio.h>
#include <sys/resource.h>
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

/* ---- args.c: the command line ---- */

/* What a parser tells main: go on; print the help or the version (status 0); or stop with
 * EXIT_USAGE, its one-line message written.  No parser exits: main decides. */
enum cli_status { CLI_GO, CLI_HELP, CLI_VERSION, CLI_BAD };

#define CLI_MAX_ROUTES 8 /* check --route, each a lookup */

struct cli {
	int check, json, strict;
	int attach, connections, follow; /* socktune attach [--connections] [--follow] ... */
	int supervise;                   /* socktune --attach PROGRAM (supervise.c) */
	const char *route[CLI_MAX_ROUTES]; /* check --route ADDR: IPv4 or IPv6 literals */
	int nroutes;
	char **program;                 /* argv of the program (run mode) */
	const char *given[ST_V_COUNT]; /* value from the command line, NULL if not given */
	/* A flag followed by a boolean word that became the program (--nodelay 1 PROGRAM...):
	 * the flag as given and the word; run.c refuses it when no such program exists. */
	int flag_at;
	const char *flag_opt, *flag_word;
};

enum cli_status usage_error(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void usage(FILE *f);
enum cli_status parse_args(int argc, char **argv, struct cli *c, FILE *msg);
enum cli_status flag_word_error(const struct cli *c, FILE *msg);
enum cli_status build_policy(const struct cli *c, struct st_policy *p, FILE *msg);

/* ---- run.c, inspect.c: socktune PROGRAM ---- */

int run_main(const struct cli *c, const struct st_policy *p, const char *argv0);
/* 1, with the one line said, when the congestion control asked for is missing here. */
int congestion_missing(const struct cli *c, const struct st_policy *p);

/* What inspect_program finds in the file: each a reason LD_PRELOAD does not reach it. */
enum { P_STATIC = 1, P_GO = 2, P_SETID = 4, P_CAPS = 8 };
int resolve_program(const char *name, char *out);
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
	char why[320];
	char fix[200];
};

struct memory {
	long long rcv, snd; /* per connection, bytes */
	int rcv_set, snd_set;
	long long nofile;   /* -1: unlimited */
	long long tcp_mem_pages, page;
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
};
int route_lookup(const char *addr, struct route_result *out);

/* Everything check reports. */
struct report {
	const struct host *h;
	const struct verdict *v;
	int n, not_full;
	const struct memory *m;
	const struct route_result *routes;
	int nroutes;
};

int check_main(const struct cli *c, const struct st_policy *p);

/* ---- attach.c: socktune attach ---- */

/* (Linux 5.3 and 5.6; older headers lack the numbers) */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
struct attach_args {
	int json, connections, follow;
	char **targets; /* PIDs and :PORTs, NULL-terminated */
};
int attach_main(const struct attach_args *a, const struct st_policy *p);
/* One pass over pid's sockets: each not handled before tuned, one line each on st->out. */
#define ATTACH_MAX_PIDS 256
struct ino_set { /* a set of nonzero keys, open addressing, grown as it fills */
	unsigned long long *keys;
	size_t cap, n;
};
struct attach_target {
	int pid, pidfd; /* pidfd -1: the slot is free */
	int gone;       /* its exit was said */
};
struct attach_state {
	FILE *out;
	int tuned, refused;
	int following; /* a later pass: refusals were said the first time */
	struct attach_target targets[ATTACH_MAX_PIDS];
	int ntargets;
	struct ino_set done;    /* socket inodes handled (tuned, or never to be: not TCP, ...) */
	struct ino_set holders; /* (pid, inode) of listeners seen: each holder said once */
};
/* A sysctl of pid's network namespace (read by a child that joins it when it is not ours),
 * -1 when it cannot be read. */
long long target_sysctl(int pid, const char *name);
void attach_pid(const struct st_policy *p, const struct attach_args *a, int pid,
                struct attach_state *st);
/* After a pass: say each target that exited since, once; returns how many still run. */
int attach_alive(struct attach_state *st);

/* ---- supervise.c: socktune --attach PROGRAM: the program as a child, tuned from outside ---- */
int supervise_main(const struct cli *c, const struct st_policy *p);
void memory_exposure(const struct host *h, const struct verdict *v, int n, struct memory *m);
void report_json(const struct report *r);
void report_text(const struct report *r);

/* ---- complete.c: socktune --list-options [SUBCOMMAND], for the shell's completion ---- */
int list_options(FILE *out, const char *sub);

/* ---- stats.c, statsview.c, statsprom.c, outfile.c: socktune stats ---- */

enum stats_format { STATS_TABLE, STATS_JSON, STATS_PROMETHEUS };
#define STATS_MAX_FILES 256

struct stats_args {
	enum stats_format format;
	long long every, times; /* --watch, --count; 0: not given */
	const char *output;     /* --output PATH (prometheus): replaced atomically */
	const char *files[STATS_MAX_FILES];
	int nfiles;
};

enum cli_status stats_parse(int argc, char **argv, struct stats_args *s, FILE *msg);
int stats_main(const struct stats_args *s);

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
};
/* 0, or 1 with a message on stderr (unreadable, not a stats file, another version). */
int stats_view_load(const char *path, struct stats_view *v);
int stats_running(const struct st_stats_file *f);
long long stats_delta(long long now, long long start); /* -1 when either is unknown */

/* The Prometheus text format of n files; views[i] NULL: paths[i] could not be read. */
void stats_prometheus(FILE *out, const char *const *paths, struct stats_view *const *views,
                      int n);

/* Replace path with the n bytes of data: a new file in the same directory, written, fsynced
 * and renamed over path; an existing path that is not a regular file is refused.  0, or -1
 * with a message in err and nothing left behind. */
int write_atomic(const char *path, const char *data, size_t n, char *err, size_t errlen);

#endif
