/* The refusals of socktune --cgroup (which options it sets, the table's sockops column:
 * st_sockops_sets, common/options.c): under --cgroup (and check --cgroup) an option the
 * program cannot set, with the mode that sets it; in every other mode an option only the
 * program sets. */
#include <stdio.h>
#include <string.h>

#include "socktune.h"
#include "socktune_opts.h"
#include "cgroup/cgroup.h"
#include "via.h"

/* Why --cgroup cannot take option id, or NULL when it can (attach: attach --cgroup). */
static const char *refused(int id, int attach)
{
	switch (id) {
	case ST_V_QUICKACK:
		return "a sock_ops program cannot set TCP_QUICKACK (it does not stay on: it is set "
		       "again after every read, in the process); use the preload (socktune --quickack "
		       "PROGRAM), or cap the delayed ACK here: --delack-max 5ms";
	case ST_V_BACKLOG:
	case ST_V_BACKLOG_MIN:
	case ST_V_BACKLOG_MAX:
		/* listen()'s argument, out of a sock_ops program's reach: the wrapper sets it
		 * from outside on its program's listeners, as --attach does (cgroup/run.c) */
		if (!attach)
			return NULL;
		return "the backlog is listen()'s argument, out of a sock_ops program's reach; "
		       "socktune attach --backlog N PID (without --cgroup) changes a live listener's "
		       "backlog";
	case ST_V_DEFER_ACCEPT:
	case ST_V_FASTOPEN:
		return "a listener's option, which bpf_setsockopt does not take; use the preload "
		       "(the same options, without --cgroup) or socktune --attach";
	case ST_V_RCVBUF_FORCE:
		return "bpf_setsockopt takes SO_RCVBUF only, capped by net.core.rmem_max; raise it "
		       "(sysctl -w net.core.rmem_max=N) or use the preload";
	case ST_V_LOG_FILE:
	case ST_V_STATS:
	case ST_V_PRECEDENCE:
		return "it is the preloaded library's, which --cgroup does not use (the program's own "
		       "setsockopt runs after the kernel's, and wins); use the preload";
	case ST_V_DRY_RUN:
		return "--cgroup attaches a program or nothing; see what the host grants with "
		       "socktune check";
	}
	if (st_is_sockopt(id) && st_sockopts[id].sockops == ST_SOCKOPS_NONE)
		return "bpf_setsockopt does not take it, or takes it only before bind(); use the "
		       "preload (the same options, without --cgroup)";
	return NULL;
}

enum cli_status cg_check(const struct cli *c, const struct st_policy *p, FILE *msg)
{
	int cgroup = c->cgroup || c->check_cgroup; /* check --cgroup: the same policy, judged */
	for (int id = 0; id < ST_V_COUNT; id++) {
		if (!st_has(p, (enum st_var_id)id))
			continue;
		const char *how = c->given[id] ? "--" : st_vars[id].env;
		const char *name = c->given[id] ? st_vars[id].option : "";
		/* (attach sets the cwnd clamp on open connections through the iterator) */
		if (!cgroup && st_cgroup_only(id) && !(c->attach && st_iter_how(id) != ST_ITER_NONE))
			return usage_error(msg, "%s%s: only a cgroup sock_ops program sets it: %s",
			                   how, name, c->check ? "check it with socktune check --cgroup"
			                   : c->attach ? "add --cgroup (socktune attach --cgroup: the "
			                                 "kernel tunes the server's next connections)"
			                               : "run the program under socktune --cgroup instead "
			                                 "(socktune --help)");
		const char *why = cgroup ? refused(id, c->attach) : NULL;
		if (why)
			return usage_error(msg, "--cgroup: %s%s: %s", how, name, why);
	}
	if (c->cgroup && (c->check || c->supervise))
		return usage_error(msg, "--cgroup: only for running a program (socktune --cgroup "
		                   "[OPTIONS] -- PROGRAM) or a running server's cgroup (socktune attach "
		                   "--cgroup PID|:PORT)");
	if (c->cgroup_path && !c->cgroup && !c->check)
		return usage_error(msg, "--cgroup-path: only with --cgroup (and socktune check)");
	if (c->cgroup_path && c->attach)
		return usage_error(msg, "--cgroup-path: not with attach --cgroup (the cgroup is the "
		                   "one the target's listeners were made in)");
	if (c->cgroup_root && !c->cgroup)
		return usage_error(msg, "--cgroup-root: only with attach --cgroup");
	if (c->attach && c->cgroup && c->follow)
		return usage_error(msg, "attach --cgroup: --follow is attach's own (from outside, socket "
		                   "by socket); the kernel tunes the cgroup's new connections itself");
	/* --connections: the connections open in the cgroup, which the program never sees, set
	 * once through the TCP iterator */
	if (c->attach && c->cgroup && c->via_given && (!c->connections || c->via == VIA_PIDFD))
		return usage_error(msg, "attach --cgroup: --via %s: %s", via_name(c->via),
		                   c->connections ? "the open connections of the cgroup are reached "
		                   "through the TCP iterator only (--via bpf or auto)"
		                   : "the program reaches the cgroup's new connections itself; --via "
		                     "applies to --connections (the open ones, through the iterator)");
	if (c->attach && c->cgroup && !st_on(p, ST_V_DISABLE)) {
		int any = 0;
		long long w;
		for (int i = 0; i < ST_O_COUNT && !any; i++)
			any = st_sockops_sets(p, i, 0, &w) || (st_on(p, ST_V_CLIENT) && st_sockops_sets(p, i, 1, &w));
		if (!any)
			return usage_error(msg, "attach --cgroup: nothing to apply: give an option the "
			                   "sock_ops program sets (--initcwnd 40, --delack-max 5ms, "
			                   "--rcvbuf 256K; socktune --help)");
	}
	if (c->npeers && !cgroup)
		return usage_error(msg, "--peer: only with --cgroup (the sock_ops program compares "
		                   "each connection's peer)");
	return CLI_GO;
}
