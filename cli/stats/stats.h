/* socktune stats: its arguments and the watch loop (stats.c), a file read and printed as a
 * table or JSON (statsview.c), the Prometheus text (statsprom.c).  Internal to cli/. */
#ifndef SOCKTUNE_CLI_STATS_H
#define SOCKTUNE_CLI_STATS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "socktune_stats.h"
#include "cli.h"

enum stats_format { STATS_TABLE, STATS_JSON, STATS_PROMETHEUS };

struct stats_args {
	enum stats_format format;
	long long every, times; /* --watch, --count; 0: not given */
	const char *output;     /* --output PATH (prometheus): replaced atomically */
	const char **files; /* as many as given (no cap): argv's */
	int nfiles;
};

enum cli_status stats_parse(int argc, char **argv, void *args, FILE *msg); /* stats_args */
int stats_main(void *args);
void stats_help(FILE *f);

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
	/* The accept queue of each slot's listener now, from sock_diag in the process's network
	 * namespace (-1: not found there); kernel 0 with kernel_why saying why it was not read. */
	int kernel;
	char kernel_why[128];
	int32_t queue_now[ST_STATS_LISTENERS];
	char error[512]; /* why it could not be read */
};
/* 0; EXIT_NOT_FOUND when there is no such file; or 1 (unreadable, not a stats file,
 * another version); a message on stderr for both. */
int stats_view_load(const char *path, struct stats_view *v);
/* The table of one file on out (stats_view_load's status). */
int stats_table(FILE *out, const char *path);
/* What a file of this mode is when it is not a regular file ("a FIFO"), else NULL. */
const char *stats_not_regular(mode_t mode);
int stats_running(const struct st_stats_file *f);
/* A slot's accept queue now: the kernel's (*from_kernel 1), else the file's last sample */
int stats_queue_now(const struct stats_view *v, int slot, int *from_kernel);
long long stats_delta(long long now, long long start); /* -1 when either is unknown */
/* The inode of a netns as the file has it ("net:[4026531833]"), -1 when not of that form. */
long long stats_netns_inode(const char *netns);
/* --json: one document of n files (status[i]: stats_view_load's), written on one line for
 * --watch; nothing readable, the error object alone.  Returns the run's status: 0; 1 when a
 * file could not be read; EXIT_NOT_FOUND when none exists. */
int stats_json(FILE *out, const char *const *paths, struct stats_view *const *views,
               const int *status, int n, int one_line);

/* The Prometheus text format of n files; views[i] NULL: paths[i] could not be read. */
void stats_prometheus(FILE *out, const char *const *paths, struct stats_view *const *views,
                      int n);

#endif
