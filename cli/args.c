/* The wrapper's command line (check's and attach's too: policyargs.c sets their mode in c
 * first) and the policy the program will run with.  The options are the ST_VARIABLES table
 * of socktune.h, every value parsed by policy.c, the code the library itself runs; nothing
 * here exits (the parser returns a status to main). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "socktune.h"
#include "cli.h"
#include "via.h"

extern char **environ;

/* check --route ADDR: an address literal (a name would be resolved, perhaps to another
 * address than the clients'), at most CLI_MAX_ROUTES of them. */
static enum cli_status route_arg(struct cli *c, const char *val, FILE *msg)
{
	unsigned char b[sizeof(struct in6_addr)];
	if (!c->check)
		return usage_error(msg, "--route: only for 'socktune check'");
	if (!val)
		return usage_error(msg, "--route: missing value (ADDR: an IPv4 or IPv6 address)");
	if (inet_pton(AF_INET, val, b) != 1 && inet_pton(AF_INET6, val, b) != 1)
		return usage_error(msg, "--route %s: not an IPv4 or IPv6 address (a literal: 127.0.0.1, ::1)",
		                   val);
	if (c->nroutes >= CLI_MAX_ROUTES)
		return usage_error(msg, "--route %s: at most %d addresses", val, CLI_MAX_ROUTES);
	c->route[c->nroutes++] = val;
	return CLI_GO;
}

/* --peer PREFIX: ADDR/LEN or ADDR (a host), IPv4 or IPv6; the bits past LEN must be 0 (a
 * prefix written with them would not mean what it says). */
static enum cli_status peer_arg(struct cli *c, const char *val, FILE *msg)
{
	if (!val || !val[0])
		return usage_error(msg, "--peer: missing value (PREFIX: 10.0.0.0/8, fd00::/8, an address)");
	char addr[64];
	const char *slash = strchr(val, '/');
	size_t alen = slash ? (size_t)(slash - val) : strlen(val);
	struct cli_peer pr = {0};
	if (alen >= sizeof addr)
		return usage_error(msg, "--peer %s: not an IPv4 or IPv6 prefix", val);
	memcpy(addr, val, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, pr.addr) == 1)
		pr.family = AF_INET;
	else if (inet_pton(AF_INET6, addr, pr.addr) == 1)
		pr.family = AF_INET6;
	else
		return usage_error(msg, "--peer %s: not an IPv4 or IPv6 prefix (10.0.0.0/8, fd00::/8, "
		                   "192.0.2.7)", val);
	int max = pr.family == AF_INET ? 32 : 128;
	pr.len = max;
	if (slash) {
		char *end;
		errno = 0;
		long l = strtol(slash + 1, &end, 10);
		if (errno || end == slash + 1 || *end || l < 0 || l > max)
			return usage_error(msg, "--peer %s: the prefix length is 0 to %d", val, max);
		pr.len = (int)l;
	}
	/* An IPv4 peer is an AF_INET socket's IPv4 address (and, on a dual-stack listener's
	 * AF_INET6 socket, ::ffff:a.b.c.d, which an IPv4 prefix matches too): a v4-mapped prefix
	 * is its IPv4 prefix, or it would match neither.  Shorter than /96 it would mix IPv4
	 * with IPv6 addresses: refused. */
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (pr.family == AF_INET6 && memcmp(pr.addr, mapped, sizeof mapped) == 0) {
		if (pr.len < 96)
			return usage_error(msg, "--peer %s: a v4-mapped prefix shorter than /96 holds "
			                   "IPv6 addresses besides IPv4 ones: give the IPv4 prefix "
			                   "(::ffff:10.0.0.0/104 is 10.0.0.0/8)", val);
		memmove(pr.addr, pr.addr + 12, 4);
		memset(pr.addr + 4, 0, 12);
		pr.family = AF_INET;
		pr.len -= 96;
		max = 32;
	}
	for (int b = pr.len; b < max; b++)
		if (pr.addr[b / 8] & (0x80 >> (b % 8)))
			return usage_error(msg, "--peer %s: bits set past /%d (the prefix is not what it "
			                   "says: the network's address, as 10.1.0.0/16)", val, pr.len);
	if (c->npeers >= CLI_MAX_PEERS)
		return usage_error(msg, "--peer %s: at most %d prefixes", val, CLI_MAX_PEERS);
	c->peer[c->npeers++] = pr;
	return CLI_GO;
}

static int is_bool_word(const char *s)
{
	long long v;
	char err[80];
	return st_parse_bool(s, &v, err, sizeof err) == 0;
}

enum cli_status flag_word_error(const struct cli *c, FILE *msg)
{
	long long on = 1;
	char err[80];
	const char *opt = c->flag_opt + 2; /* "nodelay" or "no-nodelay" */
	int negated = strncmp(opt, "no-", 3) == 0 && st_var_by_option(opt) < 0;
	st_parse_bool(c->flag_word, &on, err, sizeof err);
	const char *as = c->check    ? "an argument (check takes none)"
	                 : c->attach ? "a target (pid 1)"
	                             : "the program";
	if (negated)
		return usage_error(msg, "--%s %s: '%s' would be %s; --%s takes no value (write just "
		                   "--%s)", opt, c->flag_word, c->flag_word, as, opt, opt);
	return usage_error(msg, "--%s %s: '%s' would be %s; a flag takes its value after '=': "
	                   "--%s=%s, or just --%s%s", opt, c->flag_word, c->flag_word, as, opt,
	                   c->flag_word, on ? "" : "no-", opt);
}

/* Whose --help an unknown option points at */
static const char *help_name(const struct cli *c)
{
	return c->check ? "socktune check" : c->attach ? "socktune attach" : "socktune";
}

/* Parse argv into c.  Every value is checked by st_policy_set, the library's parser; what
 * it refuses is one line on msg and CLI_BAD.  The command turns each option into the
 * SOCKTUNE_* variable it mirrors (build_policy), then validates the environment the program
 * will see exactly as the library will read it, so they cannot disagree. */
enum cli_status parse_args(int argc, char **argv, struct cli *c, FILE *msg)
{
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break; /* the program */
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return CLI_HELP;
		if (strcmp(a, "--version") == 0)
			return CLI_VERSION;
		if (strcmp(a, "--print-library") == 0) {
			if (c->check || c->attach)
				return usage_error(msg, "--print-library: only for running a program");
			c->print_library = 1;
			return CLI_GO; /* like --version: what follows is not read */
		}
		if (strcmp(a, "--strict") == 0) {
			c->strict = 1;
			continue;
		}
		if (strcmp(a, "--attach") == 0) {
			if (c->check || c->attach)
				return usage_error(msg, "--attach: only for running a program");
			c->supervise = 1;
			continue;
		}
		if (strcmp(a, "--cgroup") == 0) {
			if (c->check)
				c->check_cgroup = 1; /* the cgroup mode's policy judged; nothing run */
			else
				c->cgroup = 1;
			continue;
		}
		if (opt_value(argc, argv, &i, "--peer", &v)) {
			if (peer_arg(c, v, msg) != CLI_GO)
				return CLI_BAD;
			continue;
		}
		if (strcmp(a, "--cgroup-root") == 0) {
			if (!c->attach)
				return usage_error(msg, "--cgroup-root: only for 'socktune attach --cgroup' "
				                   "(and socktune detach)");
			c->cgroup_root = 1;
			continue;
		}
		if (opt_value(argc, argv, &i, "--cgroup-path", &v)) {
			c->cgroup_path = v;
			if (!c->cgroup_path || !c->cgroup_path[0])
				return usage_error(msg, "--cgroup-path: missing value (PATH: a cgroup v2 "
				                   "directory to make)");
			continue;
		}
		if (strcmp(a, "--json") == 0) {
			if (!c->check && !c->attach)
				return usage_error(msg, "--json: only for 'socktune check' and 'socktune attach'");
			c->json = 1;
			continue;
		}
		if (strcmp(a, "--connections") == 0 || strcmp(a, "--follow") == 0) {
			if (!c->attach)
				return usage_error(msg, "%s: only for 'socktune attach'", a);
			if (a[2] == 'c')
				c->connections = 1;
			else
				c->follow = 1;
			continue;
		}
		if (opt_value(argc, argv, &i, "--via", &v)) {
			enum via w;
			if (!c->attach)
				return usage_error(msg, "--via: only for 'socktune attach' (and watch "
				                   "--apply, revert)");
			if (!v || via_parse(v, &w) != 0)
				return usage_error(msg, "--via %s: pidfd, bpf or auto", v ? v : "(missing)");
			c->via = (int)w;
			c->via_given = 1;
			continue;
		}
		if (opt_value(argc, argv, &i, "--route", &v)) {
			if (route_arg(c, v, msg) != CLI_GO)
				return CLI_BAD;
			continue;
		}
		if (a[1] != '-')
			return usage_error(msg, "unknown option %s (see %s --help)", a, help_name(c));

		const char *name = a + 2;
		const char *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		char key[64];
		if (len == 0 || len >= sizeof key)
			return usage_error(msg, "unknown option %s (see %s --help)", a, help_name(c));
		memcpy(key, name, len);
		key[len] = '\0';

		int id = st_var_by_option(key), negated = 0;
		if (id < 0 && strncmp(key, "no-", 3) == 0) {
			id = st_var_by_option(key + 3);
			if (id >= 0 && st_vars[id].type != ST_T_BOOL)
				id = -1;
			negated = id >= 0;
		}
		if (id < 0) {
			const char *near = st_var_suggest(key, 0);
			if (!near && strncmp(key, "no-", 3) == 0 && (near = st_var_suggest(key + 3, 0)) &&
			    st_vars[st_var_by_option(near)].type == ST_T_BOOL)
				return usage_error(msg, "unknown option --%s (did you mean --no-%s? see "
				                   "%s --help)", key, near, help_name(c));
			if (near)
				return usage_error(msg, "unknown option --%s (did you mean --%s? see "
				                   "%s --help)", key, near, help_name(c));
			return usage_error(msg, "unknown option --%s (see %s --help)", key, help_name(c));
		}

		const char *val;
		if (negated) {
			if (eq)
				return usage_error(msg, "%s: --no-%s takes no value", a, key + 3);
			val = "0";
			if (i + 1 < argc && is_bool_word(argv[i + 1]))
				c->flag_at = i;
		} else if (st_vars[id].type == ST_T_BOOL) {
			val = eq ? eq + 1 : "1";
			if (!eq && i + 1 < argc && is_bool_word(argv[i + 1])) {
				c->flag_at = i; /* judged below, once it is known what comes next */
			}
		} else if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			return usage_error(msg, "--%s: missing value (%s)", key, st_vars[id].arg);
		}

		struct st_policy scratch;
		char err[200];
		memset(&scratch, 0, sizeof scratch);
		if (st_policy_set(&scratch, (enum st_var_id)id, val, err, sizeof err) != 0)
			return usage_error(msg, "--%s %s: %s", negated ? key + 3 : key, val, err);
		c->given[id] = val;
	}
	c->program = i < argc ? argv + i : NULL;
	if (c->flag_at && c->program && c->program == argv + c->flag_at + 1) {
		/* --nodelay 1 -- true: "1" is the program.  Refused when what follows shows a value
		 * was meant: "--", other arguments (true and false ignore them, yes prints them
		 * forever), or check (which runs nothing); alone, run.c refuses it unless it is a
		 * program (socktune --nodelay true runs true). */
		c->flag_word = c->program[0];
		c->flag_opt = argv[c->flag_at];
		/* attach --nodelay 1 PID: pid 1 would be tuned too; attach --nodelay 1 alone is
		 * pid 1, a container's server */
		if (c->check || c->program[1])
			return flag_word_error(c, msg);
		if (c->attach)
			c->flag_word = NULL;
	}
	if (c->attach && !c->program)
		return usage_error(msg, "attach: which process? (PID... or :PORT...)");
	if (c->check && c->program)
		return usage_error(msg, "check: unexpected argument %s (check runs no program)",
		                   c->program[0]);
	return CLI_GO;
}

struct env_errors {
	FILE *msg;
	int n;
};

static void on_env_error(void *ctx, const char *name, const char *value, const char *msg)
{
	struct env_errors *e = ctx;
	e->n++;
	usage_error(e->msg, "%s=%s: %s", name, value, msg);
}

/* An option given on the command line replaces its SOCKTUNE_* variable.  When the variable
 * held another value (by what it means: yes and 1 are one value), one line on stderr names
 * both, so that a value set in a Dockerfile's ENV or a ConfigMap that an entrypoint's option
 * overrides is not dropped silently; a bad value is named with its error.  Not an error: the
 * option is what the program runs with. */
static void say_override(int id, const char *given)
{
	const struct st_var *v = &st_vars[id];
	const char *was = getenv(v->env);
	if (!was)
		return;
	static struct st_policy a, b; /* (large: not on the stack) */
	char err[200], unused[200];
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	int bad = st_policy_set(&a, (enum st_var_id)id, was, err, sizeof err) != 0;
	st_policy_set(&b, (enum st_var_id)id, given, unused, sizeof unused);
	if (!bad && memcmp(&a, &b, sizeof a) == 0)
		return;
	fprintf(stderr, "socktune: --%s%s%s overrides %s=%s from the environment%s%s%s\n",
	        v->option, v->type == ST_T_BOOL ? "=" : " ", given, v->env, was,
	        bad ? " (which is not valid: " : "", bad ? err : "", bad ? ")" : "");
}

/* Put the command-line values into the environment, then read the whole environment the
 * way the library will: a bad SOCKTUNE_* value there stops us before anything runs (each
 * one a line on msg, then CLI_BAD).  A variable that an option replaces is said
 * (say_override) and gone, so a bad one is not an error. */
enum cli_status build_policy(const struct cli *c, struct st_policy *p, FILE *msg)
{
	for (int i = 0; i < ST_V_COUNT; i++)
		if (c->given[i])
			say_override(i, c->given[i]);
	for (int i = 0; i < ST_V_COUNT; i++)
		if (c->given[i] && setenv(st_vars[i].env, c->given[i], 1) != 0)
			return usage_error(msg, "%s: %s", st_vars[i].env, strerror(errno));
	struct env_errors e = {msg, 0};
	memset(p, 0, sizeof *p);
	st_policy_from_env(p, environ, on_env_error, &e);
	return e.n ? CLI_BAD : CLI_GO;
}
