/* socktune attach --cgroup PID|:PORT and socktune detach PID|:PORT: the policy's sock_ops
 * program attached to the cgroup a running server's listeners were made in (cgtarget.c), and
 * removed from there.  The attachment is BPF_PROG_ATTACH with BPF_F_ALLOW_MULTI: it stays
 * after socktune exits (a BPF link would go with its descriptor), until socktune detach, and
 * runs beside any other party's program attached with the same flag.  The kernel runs it
 * for connections made from then on; those open keep their values (socktune attach, the
 * pidfd path, can still reach them).  Ours is known by record (cli/host/owned.h), never by
 * its name: detach removes ours only (from a cgroup named by its directory too), and an
 * attach where ours is already replaces it (attached first, then the old one detached: no
 * connection in between goes untuned; at the kernel's limit of 64 programs, detached
 * first).  The root cgroup (the whole host) only with --cgroup-root. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "socktune.h"
#include "cgroup/cgroup.h"
#include "record.h"
#include "host/owned.h"

#define MAX_WHERE 256
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

/* The programs on a cgroup's two hooks, sorted: ours (by record: the id, tag and load time
 * socktune wrote down when it attached them), and another party's (among them, named as ours
 * but not on record: another party's all the same). */
struct there {
	unsigned id[2 * MAX_PROGS];
	int type[2 * MAX_PROGS];
	const struct own_rec *rec[2 * MAX_PROGS];
	int n, others, named, total[2];
};
static const int hooks[2] = {OWN_AT_SOCK_OPS, OWN_AT_SETSOCKOPT};

/* Whether cgroup id was acted on already in this run (two targets, one cgroup: a PID and its
 * :PORT, two workers): 1; else it is noted, 0. */
static int seen_before(unsigned long long id)
{
	static unsigned long long done[1024];
	static int n;
	for (int k = 0; k < n; k++)
		if (done[k] == id)
			return 1;
	if (n < 1024)
		done[n++] = id;
	return 0;
}

static void look_there(int cgroup_fd, const struct own_rec *recs, int nrecs, const unsigned *keep,
                       int nkeep, struct there *t)
{
	memset(t, 0, sizeof *t);
	for (int h = 0; h < 2; h++) {
		unsigned all[MAX_PROGS];
		int n = own_query(cgroup_fd, hooks[h], all, MAX_PROGS);
		t->total[h] = n > 0 ? n : 0;
		for (int i = 0; i < n; i++) {
			int kept = 0;
			for (int k = 0; k < nkeep; k++)
				kept |= keep[k] == all[i];
			if (kept)
				continue;
			const struct own_rec *r = own_find(all[i], recs, nrecs);
			char name[32] = "";
			if (r) {
				t->id[t->n] = all[i];
				t->type[t->n] = hooks[h];
				t->rec[t->n++] = r;
			} else {
				t->others++;
				t->named += cg_prog_name(all[i], name, sizeof name) == 0 &&
				            strcmp(name, CG_PROG_NAME) == 0;
			}
		}
	}
}

/* Ours of hook type on t not yet replaced: its index, or -1. */
static int ours_of(const struct there *t, int type, const int *done)
{
	for (int k = 0; k < t->n; k++)
		if (t->type[k] == type && !done[k])
			return k;
	return -1;
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

/* The records of the sets replaced: attach --cgroup's removed (their programs are gone from
 * the cgroup); a wrapper's said, for it runs on with its programs replaced. */
static void forget_replaced(const struct there *t, const int *done, char *note, size_t n)
{
	for (int k = 0; k < t->n; k++) {
		int first = 1;
		for (int j = 0; j < k; j++)
			first &= t->rec[j] != t->rec[k];
		if (!done[k] || !first)
			continue;
		if (strcmp(t->rec[k]->kind, "run") == 0)
			snprintf(note + strlen(note), n - strlen(note), "%sthose of socktune --cgroup (pid "
			         "%d), which runs on", note[0] ? "; " : "", t->rec[k]->pid);
		else
			own_remove(t->rec[k]);
	}
}

static void attach_one(struct out *o, const char *target, const struct cg_where *w,
                       const struct cli *c, const struct st_policy *p, const struct cg_progs *g,
                       const struct host *h, const struct own_rec *recs, int nrecs)
{
	char err[6000], why[7000];
	int fd = open_target(o, target, w, c->cgroup_root, "attaching");
	if (fd < 0)
		return;
	const unsigned ids[2] = {g->hook_fd >= 0 ? g->hook_id : 0, g->ops_id};
	const int types[2] = {OWN_AT_SETSOCKOPT, OWN_AT_SOCK_OPS};
	const int fds[2] = {g->hook_fd, g->ops_fd};
	struct own_rec rec;
	/* on record before it is attached: a socktune killed in between leaves nothing that is
	 * not known as ours */
	if (own_rec_fill(&rec, "attach", w->dir, w->id, 0, fds, types, 2) != 0)
		snprintf(err, sizeof err, "%s", strerror(errno));
	else if (cg_progs_held_keys(g, rec.held, sizeof rec.held), own_write(&rec, err, sizeof err) == 0)
		err[0] = '\0';
	if (err[0]) {
		snprintf(why, sizeof why, "%.64s: %.2000s: not attached: the record that tells it is ours "
		         "could not be written: %.3000s", target, w->dir, err);
		out_fail(o, 1, target, why);
		close(fd);
		return;
	}
	/* attached beside ours there (by record), read back, then ours detached: no connection in
	 * between goes untuned.  At the kernel's limit, ours is detached first (a connection made
	 * in that moment is not tuned).  The hook first: what the new program tunes is held. */
	static struct there t;
	int done[2 * MAX_PROGS] = {0}, attached[2] = {0}, e = 0, swapped = 0;
	look_there(fd, recs, nrecs, ids, 2, &t);
	for (int k = 0; k < 2 && !e; k++) {
		if (!ids[k])
			continue;
		int old = ours_of(&t, types[k], done);
		if (own_attach(fds[k], types[k], fd, 0) == 0) {
			attached[k] = 1;
		} else if (errno == E2BIG && old >= 0 && own_attach(fds[k], types[k], fd, t.id[old]) == 0) {
			attached[k] = 1;
			done[old] = 1;
			swapped++;
		} else {
			e = errno;
		}
	}
	if (e) {
		for (int k = 0; k < 2; k++)
			if (attached[k])
				own_detach(ids[k], types[k], fd);
		own_remove(&rec);
		if (e == E2BIG)
			snprintf(err, sizeof err, "the kernel's limit of %d programs on one hook of a cgroup "
			         "is reached (%d on its sock_ops hook, %d on its setsockopt hook): detach one "
			         "(ours: socktune detach %.64s; another party's: bpftool cgroup tree)",
			         OWN_MAX_ATTACHED, t.total[0], t.total[1], target);
		else if (e == EPERM)
			snprintf(err, sizeof err, "%s (another party's program is attached there without "
			         "BPF_F_ALLOW_MULTI, which allows no other, or a capability is missing: "
			         "CAP_BPF and CAP_NET_ADMIN)", strerror(e));
		else
			snprintf(err, sizeof err, "%s", strerror(e));
		snprintf(why, sizeof why, "%.64s: %.2000s: attaching to the cgroup: %.4000s", target, w->dir, err);
		out_fail(o, e == E2BIG || e == EPERM ? EXIT_USAGE : 1, target, why);
		close(fd);
		return;
	}
	if (cg_readback(w->dir, p, st_on(p, ST_V_CLIENT), h, g->insns, g->ops_id, c->peer, c->npeers) != 0) {
		for (int k = 0; k < 2; k++)
			if (ids[k])
				own_detach(ids[k], types[k], fd);
		own_remove(&rec);
		snprintf(err, sizeof err, "%.64s: %.4000s: not attached (the probe connection above)%s",
		         target, w->dir, swapped ? "; at the kernel's limit ours there was swapped for it "
		                                   "first, and is gone: attach again with a value the "
		                                   "kernel takes" : "");
		out_fail(o, EXIT_USAGE, target, err);
		close(fd);
		return;
	}
	int replaced = 0;
	for (int k = 0; k < t.n; k++)
		if (!done[k] && own_detach(t.id[k], t.type[k], fd) == 0)
			done[k] = 1;
	for (int k = 0; k < t.n; k++)
		replaced += done[k];
	char whose[400] = "";
	forget_replaced(&t, done, whose, sizeof whose);
	close(fd);
	o->done++;
	struct rec *r = out_line(o, "info", "cgroup_attach");
	where_keys(r, target, w);
	rec_int(r, K_PROG_ID, g->ops_id);
	rec_int(r, K_INSNS, g->insns);
	rec_int(r, K_REPLACED, replaced);
	rec_int(r, K_OTHERS, t.others);
	rec_int(r, K_KEPT, w->kept);
	char open_now[200];
	if (c->connections)
		snprintf(open_now, sizeof open_now, "the %d open now were set through the TCP iterator "
		         "(their lines below; the program's hook does not hold them)", w->kept);
	else
		snprintf(open_now, sizeof open_now, "the %d open now keep their values (socktune "
		         "attach --cgroup --connections %.64s reaches those)", w->kept, target);
	snprintf(err, sizeof err, "the kernel tunes the connections made from now on in this cgroup "
	         "(it stays attached until socktune detach %.64s)%s; %s%s%s%s%s", target,
	         g->hook_fd >= 0 ? ", and holds the values against the app's own setsockopt" : "",
	         open_now, w->now[0] && strcmp(w->now, w->dir) != 0
	                                  ? "; the process is in another cgroup now: its listeners' counts" : "",
	         whose[0] ? "; replaced: " : "", whose,
	         t.named ? "; a program named socktune that socktune did not record is there: another "
	                   "party's, left alone" : "");
	rec_str(r, K_NOTE, err);
	/* --connections: the open ones, through the iterator, after the cgroup's line */
	char cerr[1000] = "";
	int refused = c->connections && o->json ? cg_conns_apply(target, w, p, r, cerr, sizeof cerr) : 0;
	out_line_end(o, r);
	if (c->connections && !o->json)
		refused = cg_conns_apply(target, w, p, NULL, cerr, sizeof cerr);
	if (cerr[0])
		fprintf(stderr, "socktune: attach --cgroup: %.64s: %s\n", target, cerr);
	if (refused) {
		o->failed++;
		o->worst = o->worst ? o->worst : 1;
	}
}

int cg_attach_main(const struct cli *c, const struct st_policy *p)
{
	char **targets = c->program; /* (PIDs and :PORTs, at least one: attach's parser) */
	struct out o;
	out_start(&o, "attach", c->json);
	if (st_on(p, ST_V_DISABLE)) {
		fprintf(stderr, "socktune: attach --cgroup: SOCKTUNE_DISABLE=1 (--disable): nothing "
		        "attached\n");
		return out_end(&o);
	}
	static struct host h;
	static struct cg_progs g;
	char err[6000];
	read_host(&h);
	own_sweep(stderr, "attach --cgroup");
	if (cg_progs_load(p, st_on(p, ST_V_CLIENT), h.hz, c->peer, c->npeers, &g, err, sizeof err) != 0) {
		out_fail(&o, EXIT_USAGE, targets[0], err);
		return out_end(&o);
	}
	if (g.hook_fd < 0 && g.hook_why[0])
		fprintf(stderr, "socktune: attach --cgroup: the server's own setsockopt is not held "
		        "(%s): a server that sets an option back on each connection (TCP_NODELAY=0, as "
		        "hyper and Erlang's inets do) undoes the policy there\n", g.hook_why);
	struct own_rec *recs;
	int lock = own_lock(), nrecs = own_read_all(&recs); /* (records read and changed under it) */
	for (int k = 0; targets[k]; k++) {
		static struct cg_where w[MAX_WHERE];
		int status, more, n = cg_target(targets[k], w, MAX_WHERE, &more, &status, err, sizeof err);
		if (n < 0)
			out_fail(&o, status, targets[k], err);
		for (int j = 0; j < n; j++)
			if (!seen_before(w[j].id))
				attach_one(&o, targets[k], &w[j], c, p, &g, &h, recs, nrecs);
		if (n > 0)
			cg_where_free(w, n);
		if (more > 0) {
			snprintf(err, sizeof err, "%.64s: its listeners are in %d more cgroups than the %d "
			         "attached to: not attached there (name them one by one: socktune attach "
			         "--cgroup PID of each)", targets[k], more, MAX_WHERE);
			out_fail(&o, 1, targets[k], err);
		}
	}
	free(recs);
	own_unlock(lock);
	cg_progs_close(&g); /* (each attachment holds the programs) */
	return out_end(&o);
}

/* What the hooks of ours on t refused of the server's own setsockopt, read before they go:
 * the total, and each option with its count said in held ("nodelay 12 (accepted)"). */
static unsigned long long refused_of(const struct there *t, char *held, size_t n)
{
	unsigned long long total = 0;
	held[0] = '\0';
	for (int k = 0; k < t->n; k++) {
		struct cg_override c[2 * ST_O_COUNT];
		int m = t->type[k] == OWN_AT_SETSOCKOPT ? cg_hook_counts_of(t->id[k], c, 2 * ST_O_COUNT) : -1;
		char keys[sizeof t->rec[k]->held], *save = NULL, *key;
		snprintf(keys, sizeof keys, "%s", t->rec[k]->held);
		key = strtok_r(keys, " ", &save);
		for (int j = 0; j < m && key; j++) {
			if (c[j].count) {
				size_t l = strlen(held);
				snprintf(held + l, n - l, "%s%s %llu (%s)", l ? ", " : "", key, c[j].count,
				         j % 2 ? "outgoing" : "accepted");
			}
			total += c[j].count;
			if (j % 2)
				key = strtok_r(NULL, " ", &save);
		}
	}
	return total;
}

static void detach_one(struct out *o, const char *target, const struct cg_where *w, int root,
                       const struct own_rec *recs, int nrecs)
{
	char err[6000];
	int fd = open_target(o, target, w, root, "detaching");
	if (fd < 0)
		return;
	static struct there t;
	int detached = 0, e = 0, done[2 * MAX_PROGS] = {0};
	look_there(fd, recs, nrecs, NULL, 0, &t);
	char held[600];
	unsigned long long refused = refused_of(&t, held, sizeof held);
	for (int k = 0; k < t.n; k++) {
		if (own_detach(t.id[k], t.type[k], fd) == 0)
			detached += done[k] = 1;
		else
			e = errno;
	}
	close(fd);
	char whose[400] = "";
	forget_replaced(&t, done, whose, sizeof whose);
	if (e) {
		snprintf(err, sizeof err, "%.64s: %.4000s: detaching ours: %s%s", target, w->dir, strerror(e),
		         e == EPERM ? " (it needs CAP_BPF and CAP_NET_ADMIN: run as root)" : "");
		out_fail(o, e == EPERM ? EXIT_USAGE : 1, target, err);
		if (!detached)
			return;
	}
	if (!t.n) {
		char dir[4096], derr[300];
		if (own_dir(dir, sizeof dir, derr, sizeof derr) != 0)
			snprintf(dir, sizeof dir, "(none: %s)", derr);
		snprintf(err, sizeof err, "%.64s: no program of socktune's attached to %.4000s (by the records "
		         "in %.300s; %d of another party's there, left alone%s)", target, w->dir, dir, t.others,
		         t.named ? ", among them one named socktune that socktune did not record" : "");
		out_fail(o, 1, target, err);
		return;
	}
	o->done++;
	struct rec *r = out_line(o, "info", "cgroup_detach");
	where_keys(r, target, w);
	rec_int(r, K_DETACHED, detached);
	rec_int(r, K_OTHERS, t.others);
	rec_int(r, K_STS_OVERRIDES_REFUSED, (long long)refused);
	snprintf(err, sizeof err, "connections made from now on in this cgroup are not tuned; those open "
	         "keep the values they have%s%s%s%.600s", whose[0] ? "; detached: " : "", whose,
	         refused ? "; the server's own setsockopt the hook refused: " : "", held);
	rec_str(r, K_NOTE, err);
	out_line_end(o, r);
}

/* A cgroup named by its directory (a server gone, or never found by PID or :PORT): 1 and w
 * filled, 0 when target is no path, -1 with err when it is no cgroup v2 directory. */
static int cgroup_path_target(const char *target, struct cg_where *w, char *err, size_t n)
{
	struct target t;
	if (parse_target(target, TARGET_CGROUP, &t) != 0)
		return 0;
	struct stat st;
	memset(w, 0, sizeof *w);
	if (!realpath(target, w->dir) || stat(w->dir, &st) != 0) {
		snprintf(err, n, "%.4000s: %s", target, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || !cg_is_v2(w->dir)) {
		snprintf(err, n, "%.4000s: not a cgroup v2 directory", target);
		return -1;
	}
	w->id = (unsigned long long)st.st_ino;
	w->root = st.st_ino == 1; /* (a cgroup2 file system's root directory: the whole host's) */
	return 1;
}

int cg_detach_main(void *args)
{
	const struct cg_detach_args *a = args;
	struct out o;
	out_start(&o, "detach", a->json);
	own_sweep(stderr, "detach");
	struct own_rec *recs;
	int lock = own_lock(), nrecs = own_read_all(&recs);
	for (int k = 0; a->targets[k]; k++) {
		static struct cg_where w[MAX_WHERE];
		char err[6000];
		int status = 1, more = 0, n = cgroup_path_target(a->targets[k], w, err, sizeof err);
		if (n == 0)
			n = cg_target(a->targets[k], w, MAX_WHERE, &more, &status, err, sizeof err);
		if (n < 0)
			out_fail(&o, status, a->targets[k], err);
		for (int j = 0; j < n; j++)
			if (!seen_before(w[j].id))
				detach_one(&o, a->targets[k], &w[j], a->root, recs, nrecs);
		if (n > 0)
			cg_where_free(w, n);
		if (more > 0) {
			snprintf(err, sizeof err, "%.64s: its listeners are in %d more cgroups: not looked at "
			         "(name them: socktune detach CGROUP)", a->targets[k], more);
			out_fail(&o, 1, a->targets[k], err);
		}
	}
	free(recs);
	own_unlock(lock);
	return out_end(&o);
}

enum cli_status cg_detach_parse(int argc, char **argv, void *args, FILE *msg)
{
	struct cg_detach_args *a = args;
	struct target t;
	int i = 1;
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
		if (parse_target(argv[k], TARGET_PID | TARGET_PORT | TARGET_CGROUP, &t) != 0)
			return usage_error(msg, "detach: %s: not a target (PID, :PORT for the listeners "
			                   "on that port, or a cgroup's directory)", argv[k]);
	a->targets = argv + i;
	return CLI_GO;
}

void detach_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune detach [--cgroup-root] [--json] PID...|:PORT...|CGROUP...\n"
	        "\n"
	        "Removes the programs socktune attached (attach --cgroup, or socktune --cgroup)\n"
	        "from the cgroup the target's TCP listeners were made in, or from the cgroup\n"
	        "directory given (a server that is gone).  Ours are known by record: each program\n"
	        "socktune attaches is written down (id, tag, load time, cgroup, who attached it)\n"
	        "in $RUNTIME_DIRECTORY, else /run/socktune; a program of another party's is left\n"
	        "alone, whatever its name.  Connections made from then on are not tuned; those\n"
	        "open keep the values they have.\n"
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

