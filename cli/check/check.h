/* socktune check: what each configured value becomes on this host (check.c: a verdict per
 * value, from the host's limits and a probe socket), the memory a connection may take, the
 * cgroup mode's word (cgmode.c), the routes' path metrics (routepath.c), and the report
 * that says them (report.c, through checksay.h's walk).  Internal to cli/. */
#ifndef SOCKTUNE_CHECK_H
#define SOCKTUNE_CHECK_H

#include <stdio.h>

#include "socktune.h"
#include "socktune_apply.h"
#include "cli.h"
#include "host/hostinfo.h"
#include "host/route.h"

/* check.c: one verdict per configured value.  In this order: up to V_UNCHECKED a value takes
 * effect in full. */
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
                      const struct host *h, int cg_usable);
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

/* check.c: the subcommand (policyargs.c parses its command line) */
int check_main(const struct cli *c, const struct st_policy *p);
void check_help(FILE *f);
int check_takes(int id); /* the policy options check takes (only --cgroup's: with --cgroup) */

/* report.c: what a connection's buffers take of memory, and the report, text or JSON */
void memory_exposure(const struct host *h, const struct verdict *v, int n, struct memory *m);
void say_report(const struct report *r, int json);

#endif
