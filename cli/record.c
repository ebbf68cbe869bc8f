/* One record, one writer (record.h): the key table, the tree a subcommand fills, and the
 * JSON and logfmt writers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "socktune.h"
#include "socktune_json.h"
#include "socktune_opts.h"
#include "record.h"

#define REC_INFO(id, name, type, meaning) {name, type, meaning},
const struct rec_key_info rec_keys[K_COUNT] = {REC_KEYS(REC_INFO)};
#undef REC_INFO

struct rec {
	int key;
	enum rec_type type;
	int decimals;
	union {
		long long i;
		double d;
		char *s;
	} v;
	struct rec *first, *last, *next;
	int oom; /* the root only: something could not be added */
	struct rec *root;
};

/* How option i is written: a group (buffers, durations), a name, a flag or an integer. */
static enum rec_type option_type(int i)
{
	unsigned flags = st_sockopts[i].flags;
	if (flags & ST_O_NAME)
		return REC_STR;
	if ((flags & ST_O_BUFFER) || st_opt_unit(i))
		return REC_GROUP;
	if (i < ST_V_COUNT && st_vars[i].type == ST_T_BOOL)
		return REC_BOOL;
	return REC_INT;
}

const char *rec_key_name(int k, char *buf, size_t n)
{
	if (k >= 0 && k < K_COUNT)
		return rec_keys[k].name;
	int i = k - K_OPTION;
	if (i < 0 || i >= ST_O_COUNT)
		return NULL;
	char key[ST_KEY_MAX];
	/* a duration has its unit in the name */
	snprintf(buf, n, "%s%s%s", st_opt_key(i, key, sizeof key), st_opt_unit(i) ? "_" : "",
	         st_opt_unit(i) ? st_opt_unit(i) : "");
	return buf;
}

enum rec_type rec_key_type(int k)
{
	if (k >= 0 && k < K_COUNT)
		return rec_keys[k].type;
	int i = k - K_OPTION;
	return i >= 0 && i < ST_O_COUNT ? option_type(i) : REC_NULL;
}

struct rec *rec_new(void)
{
	struct rec *r = calloc(1, sizeof *r);
	if (r) {
		r->type = REC_OBJ;
		r->key = -1;
		r->root = r;
	}
	return r;
}

void rec_free(struct rec *r)
{
	if (!r)
		return;
	for (struct rec *c = r->first, *next; c; c = next) {
		next = c->next;
		rec_free(c);
	}
	if (r->type == REC_STR)
		free(r->v.s);
	free(r);
}

/* A new member of parent (NULL when parent is NULL or memory ran out: the root says so). */
static struct rec *add(struct rec *parent, int k, enum rec_type type)
{
	if (!parent)
		return NULL;
	struct rec *c = calloc(1, sizeof *c);
	if (!c) {
		parent->root->oom = 1;
		return NULL;
	}
	c->key = parent->type == REC_ARR ? -1 : k;
	c->type = type;
	c->root = parent->root;
	if (parent->last)
		parent->last->next = c;
	else
		parent->first = c;
	parent->last = c;
	return c;
}

struct rec *rec_obj(struct rec *parent, int k)
{
	return add(parent, k, REC_OBJ);
}

struct rec *rec_group(struct rec *parent, int k)
{
	return add(parent, k, REC_GROUP);
}

struct rec *rec_arr(struct rec *parent, int k)
{
	return add(parent, k, REC_ARR);
}

void rec_int(struct rec *parent, int k, long long v)
{
	struct rec *c = add(parent, k, REC_INT);
	if (c)
		c->v.i = v;
}

void rec_known(struct rec *parent, int k, long long v)
{
	if (v < 0)
		rec_null(parent, k);
	else
		rec_int(parent, k, v);
}

void rec_num(struct rec *parent, int k, double v, int decimals)
{
	struct rec *c = add(parent, k, REC_NUM);
	if (c) {
		c->v.d = v;
		c->decimals = decimals;
	}
}

void rec_bool(struct rec *parent, int k, int v)
{
	struct rec *c = add(parent, k, REC_BOOL);
	if (c)
		c->v.i = v != 0;
}

void rec_str(struct rec *parent, int k, const char *s)
{
	if (!s) {
		rec_null(parent, k);
		return;
	}
	char *copy = strdup(s);
	struct rec *c = copy ? add(parent, k, REC_STR) : NULL;
	if (!c) {
		free(copy);
		if (parent && !copy)
			parent->root->oom = 1;
		return;
	}
	c->v.s = copy;
}

void rec_null(struct rec *parent, int k)
{
	add(parent, k, REC_NULL);
}

void rec_copy_members_except(struct rec *parent, const struct rec *src, int skip_a, int skip_b)
{
	if (!parent || !src)
		return;
	if (src->root == src && src->oom)
		parent->root->oom = 1;
	for (const struct rec *m = src->first; m; m = m->next)
		if (m->key < 0 || (m->key != skip_a && m->key != skip_b))
			rec_copy(parent, m->key, m);
}

void rec_copy_members(struct rec *parent, const struct rec *src)
{
	rec_copy_members_except(parent, src, -1, -1);
}

void rec_copy(struct rec *parent, int k, const struct rec *src)
{
	if (!src) {
		rec_null(parent, k);
		return;
	}
	if (src->root == src && src->oom && parent)
		parent->root->oom = 1;
	switch (src->type) {
	case REC_OBJ:
	case REC_GROUP:
	case REC_ARR: {
		struct rec *c = add(parent, k, src->type);
		if (c)
			rec_copy_members(c, src);
		return;
	}
	case REC_INT:
		rec_int(parent, k, src->v.i);
		return;
	case REC_NUM:
		rec_num(parent, k, src->v.d, src->decimals);
		return;
	case REC_BOOL:
		rec_bool(parent, k, (int)src->v.i);
		return;
	case REC_STR:
		rec_str(parent, k, src->v.s);
		return;
	case REC_NULL:
		rec_null(parent, k);
		return;
	}
}

void rec_outcome(struct rec *parent, const struct st_policy *p, int i, const struct st_outcome *o,
                 const char *name)
{
	int dry = o->state == ST_READ, shown = dry ? o->want : o->got;
	/* ST_KEPT (the app's own value kept) is the library's alone: attach keeps nothing */
	if ((o->state != ST_SET && o->state != ST_READ) || o->got == ST_UNREAD)
		return;
	int k = K_OPTION + i;
	switch (option_type(i)) {
	case REC_STR:
		rec_str(parent, k, dry ? st_opt_name(p, i) : name);
		return;
	case REC_BOOL:
		rec_bool(parent, k, shown);
		return;
	case REC_GROUP: {
		struct rec *g = rec_group(parent, k);
		rec_int(g, K_WANT, o->want);
		if ((st_sockopts[i].flags & ST_O_BUFFER) && dry) { /* what would be, what is there */
			rec_int(g, K_EFFECTIVE, st_dry_buffer(p, i, o->want));
			rec_int(g, K_NOW, o->got);
		} else
			rec_int(g, K_EFFECTIVE, shown);
		return;
	}
	default:
		rec_int(parent, k, (st_sockopts[i].flags & ST_O_UNSIGNED) ? (long long)(unsigned)shown
		                                                          : shown);
	}
}

/* ---- the writers ---- */

/* The name a member is written under in JSON: a group member's own part ("app"). */
static const char *member_name(int k, char *buf, size_t n)
{
	const char *name = rec_key_name(k, buf, n);
	if (!name)
		return "?";
	return name[0] == '.' ? name + 1 : name;
}

static void json_value(FILE *f, const struct rec *r, int depth, int pretty);

static void json_members(FILE *f, const struct rec *r, int depth, int pretty)
{
	int arr = r->type == REC_ARR;
	/* the root's members and the items of an array of objects near the top on a line each */
	int lines = pretty && (depth == 0 || (arr && depth <= 2 && r->first &&
	                                      r->first->type == REC_OBJ));
	fputc(arr ? '[' : '{', f);
	for (const struct rec *c = r->first; c; c = c->next) {
		if (c != r->first)
			fputc(',', f);
		if (lines)
			fprintf(f, "\n%*s", 2 * (depth + 1), "");
		else if (c != r->first)
			fputc(' ', f);
		if (!arr) {
			char buf[ST_KEY_MAX + 4];
			st_json_str(f, member_name(c->key, buf, sizeof buf));
			fputs(": ", f);
		}
		json_value(f, c, depth + 1, pretty);
	}
	if (depth == 0 && r->oom)
		fprintf(f, "%s%s\"error\": \"out of memory: the document is incomplete\"",
		        r->first ? "," : "", pretty ? "\n  " : " ");
	if (lines && (r->first || (depth == 0 && r->oom)))
		fprintf(f, "\n%*s", 2 * depth, "");
	fputc(arr ? ']' : '}', f);
}

static void json_value(FILE *f, const struct rec *r, int depth, int pretty)
{
	switch (r->type) {
	case REC_OBJ:
	case REC_GROUP:
	case REC_ARR:
		json_members(f, r, depth, pretty);
		break;
	case REC_INT:
		fprintf(f, "%lld", r->v.i);
		break;
	case REC_NUM:
		fprintf(f, "%.*f", r->decimals, r->v.d);
		break;
	case REC_BOOL:
		fputs(r->v.i ? "true" : "false", f);
		break;
	case REC_STR:
		st_json_str(f, r->v.s);
		break;
	case REC_NULL:
		fputs("null", f);
		break;
	}
}

void rec_write_json(FILE *f, const struct rec *r)
{
	if (!r) {
		fputs("{\"error\": \"out of memory\"}\n", f);
		return;
	}
	json_value(f, r, 0, 1);
	fputc('\n', f);
}

void rec_write_json_line(FILE *f, const struct rec *r)
{
	if (!r) {
		fputs("{\"error\": \"out of memory\"}\n", f);
		return;
	}
	json_value(f, r, 0, 0);
	fputc('\n', f);
}

static void logfmt_str(FILE *f, const char *s)
{
	int quote = !*s;
	for (const char *c = s; *c && !quote; c++)
		quote = *c == ' ' || *c == '"' || *c == '=' || *c == '\\';
	if (quote)
		fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fputc('\\', f);
		fputc(*c < 0x20 || *c == 0x7f ? '?' : *c, f);
	}
	if (quote)
		fputc('"', f);
}

/* The members of r, each "prefix.name=value" (prefix "" at the top), a space before each but
 * the first of the line (*first). */
static void logfmt_members(FILE *f, const struct rec *r, const char *prefix, int *first)
{
	int index = 0;
	for (const struct rec *c = r->first; c; c = c->next, index++) {
		char name[160], buf[ST_KEY_MAX + 4];
		if (r->type == REC_ARR)
			snprintf(name, sizeof name, "%s.%d", prefix, index);
		else {
			const char *own = rec_key_name(c->key, buf, sizeof buf);
			if (!own)
				own = "?";
			if (own[0] == '.')
				own++;
			snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", own);
		}
		if (c->type == REC_NULL)
			continue;
		if (c->type == REC_OBJ || c->type == REC_GROUP || c->type == REC_ARR) {
			logfmt_members(f, c, name, first);
			continue;
		}
		fprintf(f, "%s%s=", *first ? "" : " ", name);
		*first = 0;
		switch (c->type) {
		case REC_INT:
			fprintf(f, "%lld", c->v.i);
			break;
		case REC_NUM:
			fprintf(f, "%.*f", c->decimals, c->v.d);
			break;
		case REC_BOOL:
			fputc(c->v.i ? '1' : '0', f);
			break;
		case REC_STR:
			logfmt_str(f, c->v.s);
			break;
		default:
			break;
		}
	}
}

void rec_write_logfmt(FILE *f, const struct rec *r)
{
	int first = 1;
	if (r)
		logfmt_members(f, r, "", &first);
}

void rec_error_json(FILE *f, const char *command, const char *msg, int status)
{
	fprintf(f, "{\"schema\": %d, \"command\": ", REC_SCHEMA_VERSION);
	st_json_str(f, command);
	fputs(", \"error\": ", f);
	st_json_str(f, msg);
	fprintf(f, ", \"status\": %d}\n", status);
}

static const char *const type_names[] = {
	[REC_OBJ] = "object", [REC_GROUP] = "group", [REC_ARR] = "array", [REC_INT] = "integer",
	[REC_NUM] = "number", [REC_BOOL] = "boolean", [REC_STR] = "string", [REC_NULL] = "null",
};

void rec_print_schema(FILE *f)
{
	fprintf(f, "# socktune's JSON schema %d: name type meaning (any value may be null)\n",
	        REC_SCHEMA_VERSION);
	for (int k = 0; k < K_COUNT; k++)
		fprintf(f, "%s %s %s\n", rec_keys[k].name, type_names[rec_keys[k].type],
		        rec_keys[k].meaning);
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		char buf[ST_KEY_MAX + 4];
		int cgroup_only = !st_is_sockopt(i) && st_sockopts[i].sockops != ST_SOCKOPS_NONE;
		if (!st_is_sockopt(i) && !cgroup_only)
			continue;
		const char *name = rec_key_name(K_OPTION + i, buf, sizeof buf);
		enum rec_type t = option_type(i);
		if (cgroup_only) /* set by the cgroup mode's program alone: --help says how */
			fprintf(f, "%s %s the option --%s (socktune --cgroup)\n", name, type_names[t],
			        st_vars[i].option);
		else
			fprintf(f, "%s %s the option %s%s\n", name, type_names[t], st_sockopts[i].label,
			        t == REC_GROUP ? " (members .want, .effective; .now in a dry run)" : "");
	}
}

void rec_say(FILE *f, const char *prefix, const struct rec *r)
{
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	if (!m)
		return;
	fputs(prefix, m);
	rec_write_logfmt(m, r);
	fputc('\n', m);
	if (fclose(m) == 0)
		fwrite(line, 1, len, f);
	fflush(f);
	free(line);
}
