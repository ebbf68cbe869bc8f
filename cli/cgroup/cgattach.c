/* socktune attach --cgroup PID|:PORT and socktune detach PID|:PORT: the policy's sock_ops
 * program attached to the cgroup a running server's listeners were made in (cgtarget.c), and
 * removed from there.  The attachment is BPF_PROG_ATTACH with BPF_F_ALLOW_MULTI: it stays
 * after socktune exits (a BPF link would go with its descriptor), until socktune detach, and
 * runs beside any other party's program attached with the same flag.  The kernel runs it
 * for connections made from then on; those open keep their values (socktune attach, the
 * pidfd path, can still reach them).  Ours is told by its name (CG_PROG_NAME): detach
 * removes ours only, and an attach where ours is already replaces it (attached first,
 * then the old one detached: no connection in between goes untuned).  The root cgroup
 * (the whole host) only with --cgroup-root. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socktune.h"
#include "cgroup.h"
#include "record.h"

#define MAX_WHERE 16
#define MAX_PROGS 64

struct out {
	int json, status, done, failed, worst;
	const char *command; /* "attach", "detach" */
	struct rec *doc, *cgroups;
};

static void out_start(struct out *o, const char *command, int json)
{
	*o = (struct out){.json = json, .command = command};
	if (!json)
		return;
	o->doc = rec_new();
	rec_int(o->doc, K_SCHEMA, REC_SCHEMA_VERSION);
	rec_str(o->doc, K_COMMAND, command);
	rec_str(o->doc, K_VERSION, ST_VERSION);
	o->cgroups = rec_arr(o->doc, K_CGROUPS);
}

/* A failure of one target or cgroup, said on stderr (and in the document): status is what
 * it would make the command's alone (2 refused, 3 not there, 1 otherwise). */
static void out_fail(struct out *o, int status, const char *target, const char *why)
{
	fprintf(stderr, "socktune: %s%s: %s\n", o->command,
	        strcmp(o->command, "attach") == 0 ? " --cgroup" : "", why);
	o->failed++;
	if (!o->worst || status == EXIT_USAGE)
		o->worst = status;
	if (o->json) {
		struct rec *r = rec_obj(o->cgroups, 0);
		rec_str(r, K_TARGET, target);
		rec_str(r, K_ERROR, why);
	}
}

/* One cgroup acted on: r written as a line on stdout, or kept in the document. */
static struct rec *out_line(struct out *o, const char *level, const char *event)
{
	struct rec *r = o->json ? rec_obj(o->cgroups, 0) : rec_new();
	if (!o->json) {
		rec_int(r, K_PID, (long long)getpid());
		rec_str(r, K_LEVEL, level);
		rec_str(r, K_EVENT, event);
	}
	return r;
}

static void out_line_end(struct out *o, struct rec *r)
{
	if (o->json)
		return;
	rec_say(stdout, "socktune ", r);
	rec_free(r);
}

/* 0 when every cgroup was done; else the failure's own status when nothing was done, 1
 * when some was. */
static int out_end(struct out *o)
{
	int status = !o->failed ? 0 : !o->done ? o->worst : 1;
	if (o->json) {
		rec_int(o->doc, K_STATUS, status);
		rec_write_json(stdout, o->doc);
		rec_free(o->doc);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) { /* what was done stays done: said */
		fprintf(stderr, "socktune: stdout: %s (the report is lost; what it says "
		        "was done all the same)\n", strerror(errno));
		return 1;
	}
	return status;
}

static void where_keys(struct rec *r, const char *target, const struct cg_where *w)
{
	rec_str(r, K_TARGET, target);
	rec_str(r, K_CGROUP, w->dir);
	rec_int(r, K_CGROUP_ID, (long long)w->id);
	if (w->now[0] && strcmp(w->now, w->dir) != 0)
		rec_str(r, K_CGROUP_NOW, w->now);
}

static const char *root_refused(const char *target, const struct cg_where *w, const char *cmd,
                                char *buf, size_t n)
{
	snprintf(buf, n, "%.64s: its listeners were made in the root cgroup %.4000s, the whole host: "
	         "%s there %s every TCP connection of the host; say that scope with "
	         "--cgroup-root, or run the server in a cgroup of its own (socktune --cgroup -- "
	         "PROGRAM, systemd-run --scope)", target, w->dir, cmd,
	         strcmp(cmd, "attaching") == 0 ? "tunes" : "concerns");
	return buf;
}

/* Ours on cgroup_fd (by name) but keep: into ids; the count.  *others: another party's. */
static int ours_there(int cgroup_fd, unsigned keep, unsigned *ids, int *others)
{
	unsigned all[MAX_PROGS];
	int n = cg_query(cgroup_fd, all, MAX_PROGS), k = 0;
	*others = 0;
	for (int i = 0; i < n; i++) {
		char name[32] = "";
		if (all[i] == keep)
			continue;
		if (cg_prog_name(all[i], name, sizeof name) == 0 && strcmp(name, CG_PROG_NAME) == 0)
			ids[k++] = all[i];
		else
			(*others)++;
	}
	return k;
}

/* Target's cgroup directory, open; -1 when refused (the root cgroup without root_ok: the
 * whole host) or not openable, said in o. */
static int open_target(struct out *o, const char *target, const struct cg_where *w, int root_ok,
                       const char *doing)
{
	char err[6000];
	if (w->root && !root_ok) {
		out_fail(o, EXIT_USAGE, target, root_refused(target, w, doing, err, sizeof err));
		return -1;
	}
	int fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, sizeof err, "%.64s: %.4000s: %s", target, w->dir, strerror(errno));
		out_fail(o, 1, target, err);
	}
	return fd;
}

static void attach_one(struct out *o, const char *target, const struct cg_where *w,
                       const struct cli *c, const struct st_policy *p, int prog_fd,
                       unsigned prog_id, int insns, const struct host *h)
{
	char err[6000];
	int fd = open_target(o, target, w, c->cgroup_root, "attaching");
	if (fd < 0)
		return;
	if (cg_prog_attach(prog_fd, fd, err, sizeof err) != 0) {
		char why[7000];
		snprintf(why, sizeof why, "%.64s: %.2000s: %.4000s", target, w->dir, err);
		out_fail(o, EXIT_USAGE, target, why);
		close(fd);
		return;
	}
	if (cg_readback(w->dir, p, st_on(p, ST_V_CLIENT), h, insns, prog_id, c->peer, c->npeers) != 0) {
		cg_prog_detach(prog_id, fd); /* (said by the read-back: nothing left attached) */
		snprintf(err, sizeof err, "%.64s: %.4000s: not attached (the probe connection above)", target,
		         w->dir);
		out_fail(o, EXIT_USAGE, target, err);
		close(fd);
		return;
	}
	unsigned old[MAX_PROGS];
	int others, n = ours_there(fd, prog_id, old, &others), replaced = 0;
	for (int k = 0; k < n; k++)
		replaced += cg_prog_detach(old[k], fd) == 0;
	close(fd);
	o->done++;
	struct rec *r = out_line(o, "info", "cgroup_attach");
	where_keys(r, target, w);
	rec_int(r, K_PROG_ID, prog_id);
	rec_int(r, K_INSNS, insns);
	rec_int(r, K_REPLACED, replaced);
	rec_int(r, K_OTHERS, others);
	rec_int(r, K_KEPT, w->kept);
	snprintf(err, sizeof err, "the kernel tunes the connections made from now on in this cgroup "
	         "(it stays attached until socktune detach %.64s); the %d open now keep their values "
	         "(socktune attach --connections %.64s reaches those, if permitted)%s", target, w->kept,
	         target, w->now[0] && strcmp(w->now, w->dir) != 0
	                         ? "; the process is in another cgroup now: its listeners' counts" : "");
	rec_str(r, K_NOTE, err);
	out_line_end(o, r);
}

int cg_attach_main(const struct cli *c, const struct st_policy *p)
{
	char **targets = c->program;
	int pid;
	unsigned port;
	if (!targets || !targets[0]) {
		usage_error(stderr, "attach --cgroup: no target (PID or :PORT)");
		if (c->json)
			rec_error_json(stdout, "attach", "attach --cgroup: no target (PID or :PORT)", EXIT_USAGE);
		return EXIT_USAGE;
	}
	for (int k = 0; targets[k]; k++)
		if (cg_target_parse(targets[k], &pid, &port) != 0) {
			char why[300];
			snprintf(why, sizeof why, "attach --cgroup: %.64s: not a target (PID, or :PORT for the "
			         "listeners on that port)", targets[k]);
			usage_error(stderr, "%s", why);
			if (c->json)
				rec_error_json(stdout, "attach", why, EXIT_USAGE);
			return EXIT_USAGE;
		}
	struct out o;
	out_start(&o, "attach", c->json);
	if (st_on(p, ST_V_DISABLE)) {
		fprintf(stderr, "socktune: attach --cgroup: SOCKTUNE_DISABLE=1 (--disable): nothing "
		        "attached\n");
		return out_end(&o);
	}
	static struct host h;
	char err[6000];
	int insns = 0;
	read_host(&h);
	int prog_fd = cg_prog_load(p, st_on(p, ST_V_CLIENT), h.hz, c->peer, c->npeers, &insns, err,
	                           sizeof err);
	if (prog_fd < 0) {
		out_fail(&o, EXIT_USAGE, targets[0], err);
		return out_end(&o);
	}
	unsigned prog_id = cg_prog_id(prog_fd);
	for (int k = 0; targets[k]; k++) {
		static struct cg_where w[MAX_WHERE];
		int status, n = cg_target(targets[k], w, MAX_WHERE, &status, err, sizeof err);
		if (n < 0)
			out_fail(&o, status, targets[k], err);
		for (int j = 0; j < n; j++)
			attach_one(&o, targets[k], &w[j], c, p, prog_fd, prog_id, insns, &h);
	}
	close(prog_fd); /* (each attachment holds the program) */
	return out_end(&o);
}

static void detach_one(struct out *o, const char *target, const struct cg_where *w, int root)
{
	char err[6000];
	int fd = open_target(o, target, w, root, "detaching");
	if (fd < 0)
		return;
	unsigned ids[MAX_PROGS];
	int others, n = ours_there(fd, 0, ids, &others), detached = 0, e = 0;
	for (int k = 0; k < n; k++) {
		if (cg_prog_detach(ids[k], fd) == 0)
			detached++;
		else
			e = errno;
	}
	close(fd);
	if (e) {
		snprintf(err, sizeof err, "%.64s: %.4000s: BPF_PROG_DETACH: %s%s", target, w->dir, strerror(e),
		         e == EPERM ? " (it needs CAP_BPF and CAP_NET_ADMIN: run as root)" : "");
		out_fail(o, e == EPERM ? EXIT_USAGE : 1, target, err);
		if (!detached)
			return;
	}
	if (!n) {
		snprintf(err, sizeof err, "%.64s: no program of socktune's attached to %.4000s (%d of another "
		         "party's there, left alone)", target, w->dir, others);
		out_fail(o, 1, target, err);
		return;
	}
	o->done++;
	struct rec *r = out_line(o, "info", "cgroup_detach");
	where_keys(r, target, w);
	rec_int(r, K_DETACHED, detached);
	rec_int(r, K_OTHERS, others);
	rec_str(r, K_NOTE, "connections made from now on in this cgroup are not tuned; those open "
	        "keep the values they have");
	out_line_end(o, r);
}

int cg_detach_main(const struct cg_detach_args *a)
{
	struct out o;
	out_start(&o, "detach", a->json);
	for (int k = 0; a->targets[k]; k++) {
		static struct cg_where w[MAX_WHERE];
		char err[6000];
		int status, n = cg_target(a->targets[k], w, MAX_WHERE, &status, err, sizeof err);
		if (n < 0)
			out_fail(&o, status, a->targets[k], err);
		for (int j = 0; j < n; j++)
			detach_one(&o, a->targets[k], &w[j], a->root);
	}
	return out_end(&o);
}

enum cli_status cg_detach_parse(int argc, char **argv, struct cg_detach_args *a, FILE *msg)
{
	int i = 1, pid;
	unsigned port;
	memset(a, 0, sizeof *a);
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *s = argv[i];
		if (strcmp(s, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			return CLI_HELP;
		if (strcmp(s, "--version") == 0)
			return CLI_VERSION;
		if (strcmp(s, "--json") == 0)
			a->json = 1;
		else if (strcmp(s, "--cgroup-root") == 0)
			a->root = 1;
		else
			return usage_error(msg, "detach: %s: unknown option (socktune detach --help)", s);
	}
	if (i == argc)
		return usage_error(msg, "detach: no target (PID or :PORT; socktune detach --help)");
	for (int k = i; k < argc; k++)
		if (cg_target_parse(argv[k], &pid, &port) != 0)
			return usage_error(msg, "detach: %s: not a target (PID, or :PORT for the listeners "
			                   "on that port)", argv[k]);
	a->targets = argv + i;
	return CLI_GO;
}

void detach_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune detach [--cgroup-root] [--json] PID...|:PORT...\n"
	        "\n"
	        "Removes the sock_ops program socktune attach --cgroup attached to the cgroup the\n"
	        "target's TCP listeners were made in (ours, by its name \"socktune\"; another\n"
	        "party's program there is left alone).  Connections made from then on are not\n"
	        "tuned; those open keep the values they have.\n"
	        "\n"
	        "Options:\n");
	help_entry(f, "--cgroup-root", "the target's listeners are in the root cgroup (the whole "
	           "host): detach from there too (refused without it)", NULL);
	help_entry(f, "--json", "print one JSON document: each cgroup, what was detached, the "
	           "exit status; a failure too", NULL);
	help_entry(f, "--help, --version", "", NULL);
	fprintf(f, "\n"
	           "Exit status: 0 when ours was detached from every cgroup found; 1 when one had\n"
	           "none of ours, or some could not be done; 2 for a bad option or target, or the\n"
	           "root cgroup without --cgroup-root; 3 when the target is not there (no such\n"
	           "process, no listener on the port).\n");
}
