/* The live counters file (SOCKTUNE_STATS): written by the library through a shared
 * mapping, read by `socktune stats`.  A plain file of fixed layout, so it stays readable
 * after the server is killed; the magic and version make a file of another layout refused
 * rather than misread. */
#ifndef SOCKTUNE_STATS_H
#define SOCKTUNE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#define ST_STATS_MAGIC "socktune-stats\n"  /* 15 characters and a NUL: 16 bytes */
#define ST_STATS_VERSION 1
#define ST_STATS_LISTENERS 128
#define ST_STATS_SAMPLE_NS 100000000ll /* sample the accept queue at most every 100 ms */

struct st_stats_listener {
	_Atomic uint32_t used;
	int32_t family;
	uint32_t port;
	int32_t backlog;  /* effective, read back with TCP_INFO */
	int32_t rcvbuf;   /* effective, as the kernel reports it (2x the request); -1 not set */
	int32_t sndbuf;
	uint32_t adopted; /* 1: inherited listener tuned at its first accept */
	uint32_t pad;
	char addr[64];
	_Atomic uint64_t accepted;
	_Atomic uint32_t queue_peak; /* accept queue depth (tcpi_unacked), highest sample */
	_Atomic uint32_t queue_last; /* and the latest */
	_Atomic int64_t sampled_ns;  /* CLOCK_MONOTONIC of the latest sample */
	_Atomic uint64_t samples;
};

struct st_stats_file {
	char magic[16];
	uint32_t version;
	uint32_t size; /* sizeof(struct st_stats_file) */
	int64_t pid;
	int64_t started;                 /* time(NULL) when the file was made */
	int64_t listen_overflows_start;  /* TcpExt ListenOverflows of the netns, -1 unknown */
	int64_t listen_drops_start;      /* TcpExt ListenDrops */
	char netns[48];                  /* readlink /proc/self/ns/net */
	_Atomic uint64_t quickack_rearms;
	_Atomic uint64_t setsockopt_failures;
	_Atomic uint64_t app_overrides_refused;
	_Atomic uint32_t listeners_used; /* slots handed out so far (high-water) */
	uint32_t pad;
	struct st_stats_listener listener[ST_STATS_LISTENERS];
};

/* Print a stats file as a table, or as JSON.  Returns 0, or 1 with a message on stderr
 * (unreadable, not a stats file, another version). */
int st_stats_print(const char *path, int json);

/* TcpExt counters of the current network namespace (/proc/net/netstat), or -1. */
long long st_netstat(const char *name);

#endif
