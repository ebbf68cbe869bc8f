/* check and attach, the subcommands that take the policy options: their command line is the
 * wrapper's (args.c), the environment then read as the library will read it, the cgroup
 * mode's refusals (cgroup/cgargs.c), and attach's own (attach/attachargs.c) and its targets;
 * then their main.  Here, at the top of cli/, since attach is the attach/ folder's and, with
 * --cgroup, the cgroup/ folder's. */
#include <stdio.h>

#include "socktune.h"
#include "cli.h"
#include "cgroup/cgroup.h"
#include "check/check.h"
#include "attach/attach.h"

/* argv[0] is the subcommand's name, set in c as its mode before */
static enum cli_status policy_parse(int argc, char **argv, struct policy_args *a, FILE *msg)
{
	enum cli_status r = parse_args(argc, argv, &a->c, msg);
	if (r == CLI_GO)
		r = build_policy(&a->c, &a->p, msg);
	if (r == CLI_GO)
		r = cg_check(&a->c, &a->p, msg);
	return r;
}

enum cli_status check_parse(int argc, char **argv, void *args, FILE *msg)
{
	struct policy_args *a = args;
	a->c.check = 1;
	return policy_parse(argc, argv, a, msg);
}

int check_run(void *args)
{
	struct policy_args *a = args;
	return check_main(&a->c, &a->p);
}

/* attach's targets, each checked before anything is looked at: PIDs and :PORTs */
static enum cli_status attach_targets(const struct cli *c, FILE *msg)
{
	struct target t;
	for (char **w = c->program; *w; w++) {
		if (parse_target(*w, TARGET_PID | TARGET_PORT, &t) == 0)
			continue;
		if (c->cgroup)
			return usage_error(msg, "attach --cgroup: %.64s: not a target (PID, or :PORT for "
			                   "the listeners on that port)", *w);
		if (t.kind == TARGET_PORT)
			return usage_error(msg, "attach %s: not a port (:1 to :65535)", *w);
		return usage_error(msg, "attach %s: not a pid or :PORT", *w);
	}
	return CLI_GO;
}

enum cli_status attach_parse(int argc, char **argv, void *args, FILE *msg)
{
	struct policy_args *a = args;
	a->c.attach = 1;
	enum cli_status r = policy_parse(argc, argv, a, msg);
	if (r == CLI_GO && !a->c.cgroup)
		r = attach_check(&a->c, &a->p, msg);
	if (r == CLI_GO)
		r = attach_targets(&a->c, msg);
	return r;
}

int attach_run(void *args)
{
	struct policy_args *a = args;
	if (a->c.cgroup)
		return cg_attach_main(&a->c, &a->p);
	struct attach_args aa = {.json = a->c.json, .connections = a->c.connections,
	                         .follow = a->c.follow, .via = a->c.via, .targets = a->c.program};
	return attach_main(&aa, &a->p);
}
