/* socktune attach's command line: its --help, the policy options it takes, and what it
 * refuses before anything is looked at: an option that cannot reach a running server's
 * sockets from outside, one that reaches only connections without --connections, and a
 * command line with nothing to apply. */
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "socktune_apply.h"
#include "socktune_opts.h"
#include "attach/attach.h"
#include "via.h"

/* Why option id cannot reach anything from outside, or NULL when it can. */
static const char *cannot_reach(int id)
{
	unsigned flags = st_is_sockopt(id) ? st_sockopts[id].flags : 0;
	if (flags & ST_O_BEFORE_BIND)
		return "it is set before bind(), and a running server's sockets are bound already; "
		       "run the server under socktune (socktune --help)";
	if (flags & ST_O_CLIENT_ONLY)
		return "it counts the SYNs of a connection being made, and attach finds established "
		       "ones only; run the client under socktune --client";
	if (st_cgroup_only(id) && st_iter_how(id) == ST_ITER_NONE)
		return "only a cgroup sock_ops program sets it, on new connections: attach --cgroup "
		       "(its next connections), or run the server under socktune --cgroup";
	switch (id) {
	case ST_V_QUICKACK:
		/* TCP_QUICKACK is not a setting that stays: the kernel goes back to delayed ACKs
		 * once the exchange looks interactive, so it is set again after each read */
		return "quick-ack does not stay on (the kernel goes back to delayed ACKs), so it is "
		       "set again after every read, which only the process itself can do; from "
		       "outside, cap the delayed ACK instead: --delack-max 5ms --connections (Linux "
		       "6.15), or run the server under socktune --quickack";
	case ST_V_LOG:
	case ST_V_LOG_FILE:
		return "it is the library's log, in the process it runs in; attach writes its own "
		       "lines to stdout";
	case ST_V_STATS:
		return "the library writes its statistics from inside the process; run the server "
		       "under socktune --stats PATH";
	case ST_V_PRECEDENCE:
		return "it decides, in the process, between the policy and the program's own "
		       "setsockopt; attach sets the policy once, from outside";
	}
	return NULL;
}

int attach_takes(int id)
{
	return cannot_reach(id) == NULL;
}

/* Whether option id reaches only connections: without --connections it would reach none. */
static int connections_only(int id)
{
	if (id == ST_V_CLIENT || id == ST_V_CLIENT_PORTS)
		return 1; /* outgoing connections are found with the accepted ones */
	if (st_cgroup_only(id))
		return 1; /* (the cwnd clamp: on open connections, through the iterator) */
	return st_is_sockopt(id) && (st_sockopts[id].flags & ST_O_EACH_CONN);
}

/* A command line refused: its line on msg.  Under --json, msg is the dispatcher's, which
 * turns the line into the run's one error document (json_refused in main.c). */
static enum cli_status refuse(FILE *msg, const char *why)
{
	return usage_error(msg, "%s", why);
}

enum cli_status attach_check(const struct cli *c, const struct st_policy *p, FILE *msg)
{
	char why[1024];
	for (int i = 0; i < ST_V_COUNT; i++) {
		const char *cannot = c->given[i] ? cannot_reach(i) : NULL;
		if (cannot) {
			snprintf(why, sizeof why, "attach: --%s: %s", st_vars[i].option, cannot);
			return refuse(msg, why);
		}
		if (c->given[i] && st_cgroup_only(i) && c->via == VIA_PIDFD) {
			snprintf(why, sizeof why, "attach --via pidfd: --%s: %s", st_vars[i].option,
			         "no socket option sets it: only a BPF program does, on an open "
			         "connection the TCP iterator (--via bpf or auto)");
			return refuse(msg, why);
		}
		if (c->given[i] && !c->connections && connections_only(i)) {
			snprintf(why, sizeof why, "attach: --%s reaches connections only (a listener does "
			         "not pass it on to those it accepts): add --connections", st_vars[i].option);
			return refuse(msg, why);
		}
	}
	if (st_on(p, ST_V_DISABLE))
		return CLI_GO; /* attach says it and changes nothing */
	if (st_backlog_governed(p))
		return CLI_GO;
	for (int i = 0; i < ST_V_COUNT; i++)
		if ((st_is_sockopt(i) || st_cgroup_only(i)) && st_has(p, i) && attach_takes(i) &&
		    (c->connections || !connections_only(i)))
			return CLI_GO;
	return refuse(msg, "attach: nothing to apply: no option that attach sets was given (here "
	              "or as a SOCKTUNE_* variable); add one, e.g. --nodelay, --backlog N or --rcvbuf "
	              "SIZE (socktune attach --help)");
}

void attach_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune attach [OPTIONS] [--connections] [--follow] [--via pidfd|bpf|auto]\n"
	        "                       [--json] PID...|:PORT...\n"
	        "       socktune attach --cgroup [--connections] [--cgroup-root] [--peer PREFIX]...\n"
	        "                       [OPTIONS] [--json] PID...|:PORT...\n"
	        "\n"
	        "Tunes a server that is already running, in any language, from outside: each of\n"
	        "its sockets found is set through a copy held only for the change (or, with no\n"
	        "ptrace access, through the TCP iterator: --via), read back and said in one\n"
	        "line.  PID means the service: PID, every process holding one of its\n"
	        "TCP listeners (prefork workers) and every process holding a connection accepted\n"
	        "on one (backends); each line names the pid holding the socket tuned.  :PORT\n"
	        "means the listeners on that port only (and their connections).\n"
	        "\n");
	help_policy(f, attach_takes);
	fprintf(f, "\nCommand options:\n");
	help_entry(f, "--connections", "also tune the established TCP connections accepted on the "
	           "target's listeners (the options that matter on a connection); with --client its "
	           "outgoing ones too", NULL);
	help_entry(f, "--via pidfd|bpf|auto", "how a socket is reached: pidfd, a copy of its "
	           "descriptor (pidfd_getfd: the same uid and a dumpable target, or "
	           "CAP_SYS_PTRACE); bpf, a TCP iterator program made for the run, loaded, run once "
	           "per network namespace and closed, that sets the options by the socket's "
	           "sock_diag cookie (Linux 6.4 with BTF; CAP_BPF with CAP_PERFMON, or "
	           "CAP_SYS_ADMIN; no descriptor, no ptrace); auto (default): pidfd where the copy "
	           "is given, else bpf.  Without ptrace access a PID's sockets are those made in "
	           "its cgroup, when that holds only it and its descendants.  What a path cannot "
	           "do is refused for that socket, the other path named: the backlog needs pidfd; "
	           "--cwnd-clamp, and --delack-max and --rto-min on a kernel without their socket "
	           "options (before 6.15), need bpf.  With --cgroup --connections: bpf", NULL);
	help_entry(f, "--follow", "keep going, tuning sockets as they appear (every 100 ms), until "
	           "the processes exit, stdout's reader leaves, or an interrupt", NULL);
	help_entry(f, "--json", "print one JSON document: the sockets tuned, the warnings, the "
	           "counts and the exit status (with --follow, when it ends); a failure too", NULL);
	help_entry(f, "--cgroup", "instead of the sockets, the cgroup the target's listeners were "
	           "made in: the policy as a sock_ops program attached there (beside other "
	           "programs: BPF_F_ALLOW_MULTI), which stays until socktune detach; the kernel "
	           "tunes the connections made from then on, those open keep their values.  The "
	           "options of socktune --cgroup (socktune --help), --initcwnd too", NULL);
	help_entry(f, "--cgroup --connections", "the program attached, and the connections open "
	           "on the target's listeners in that cgroup (which it never sees) set once "
	           "through the TCP iterator: the same options, but the initial windows and the "
	           "SYN's RTO (new connections only)", NULL);
	help_entry(f, "--cgroup-root", "with --cgroup: the target's listeners are in the root "
	           "cgroup, the whole host: attach there all the same (refused without it)", NULL);
	help_entry(f, "--peer PREFIX", "with --cgroup: only connections whose peer is in PREFIX "
	           "(IPv4 or IPv6; several: any of them)", NULL);
	help_entry(f, "--help, --version", "", NULL);
	fprintf(f,
	        "\n"
	        "Not here, and refused: the options set before bind(), the SYN count of outgoing\n"
	        "connections, quick-ack and the library's own log, statistics and precedence:\n"
	        "they cannot reach a running server's sockets from outside (run the server under\n"
	        "socktune for those).  A command line with nothing to apply is refused too.\n"
	        "\n"
	        "Exit status: 0 when every socket found was tuned; 1 when some were refused or\n"
	        "the lines could not be written; 2 for a bad option, an option that reaches\n"
	        "nothing, or nothing to apply; 3 when nothing was tuned (no such process, a\n"
	        "process with no TCP socket, no listener on the port, none this user may reach:\n"
	        "said on stderr); --follow: 130 on SIGINT, 143 on SIGTERM, after a summary line\n"
	        "on stderr.\n");
}
