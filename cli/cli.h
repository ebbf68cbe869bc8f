/* What every part of the socktune command shares: the parsed command line and the statuses
 * its parsers return, the exit codes, and the top's helpers (usage, target, stop, child, help,
 * outfile, complete, pass).  A layer's own declarations are in its folder: the host view's in
 * the headers of cli/host/, each subcommand's in its own (check/check.h, ...).  Internal to
 * cli/; the library never sees it. */
#ifndef SOCKTUNE_CLI_H
#define SOCKTUNE_CLI_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "socktune.h"

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
/* (peer.c) Whether the remote address (family, addr) is in one of peers, as the cgroup mode's
 * program matches it. */
int peer_in(const struct cli_peer *peers, int npeers, int family, const unsigned char *addr);

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
 * "--seconds=V", or for "--seconds V" the next word (*i moved onto it); *val NULL when no
 * value was given ("--seconds=", or no next word, or one that is another option: "--x"); 0
 * when argv[*i] is another word (nothing moved).  Every parser reads its options'
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

/* ---- outfile.c: a file replaced whole (stats --output, watch --textfile) ---- */

/* Replace path with the n bytes of data: a new file in the same directory, written, fsynced
 * and renamed over path; an existing path that is not a regular file, or is another user's,
 * is refused.  0, or -1
 * with a message in err and nothing left behind. */
int write_atomic(const char *path, const char *data, size_t n, char *err, size_t errlen);

/* ---- complete.c: socktune --list-options [SUBCOMMAND], for the shell's completion ---- */
int list_options(FILE *out, const char *sub);

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
