/* SOCKTUNE_STATS: the library keeps its counters in an anonymous shared mapping (shared
 * with fork()ed workers, out of reach of any other process) and writes a copy of it, a
 * snapshot, to the file at the path.  `socktune stats` reads the live counters of a running
 * process with process_vm_readv (the header says where they are), otherwise the snapshot:
 * it stays readable after the server is killed.  The magic and version make a file of
 * another layout refused rather than misread. */
#ifndef SOCKTUNE_STATS_H
#define SOCKTUNE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#define ST_STATS_MAGIC "socktune-stats\n"  /* 15 characters and a NUL: 16 bytes */
#define ST_STATS_VERSION 2
#define ST_STATS_LISTENERS 128
#define ST_STATS_SAMPLE_NS 100000000ll /* sample the accept queue at most every 100 ms */

/* A slot's state: never used, being filled by one thread, a live listener, or a closed one
 * (shown, marked closed, until a new listener needs the slot: closed slots are reused
 * first, so a server that reloads its listener keeps one slot or two). */
enum { ST_SLOT_FREE = 0, ST_SLOT_BUSY = 1, ST_SLOT_LIVE = 2, ST_SLOT_CLOSED = 3 };

struct st_stats_listener {
	_Atomic uint32_t state;      /* ST_SLOT_*: a reader shows LIVE and CLOSED slots */
	_Atomic uint32_t generation; /* bumped each time the slot is handed out */
	int64_t owner;               /* pid of the process that made the listener */
	int32_t family;
	uint32_t port;
	_Atomic int32_t backlog; /* effective, read back with TCP_INFO */
	int32_t rcvbuf;          /* effective, as the kernel reports it (2x the request); -1 not set */
	int32_t sndbuf;
	uint32_t adopted; /* 1: inherited listener tuned at its first accept */
	char addr[64];
	_Atomic uint64_t accepted;
	_Atomic uint32_t queue_peak; /* accept queue depth (tcpi_unacked), highest sample */
	_Atomic uint32_t queue_last; /* and the latest */
	_Atomic int64_t sampled_ns;  /* CLOCK_MONOTONIC of the latest sample */
	_Atomic uint64_t samples;
	_Atomic uint64_t drain_at; /* accepted count that empties the queue seen at the last
	                            * sample (0: none): one more snapshot then */
};

struct st_stats_file {
	char magic[16];
	uint32_t version;
	uint32_t size; /* sizeof(struct st_stats_file) */
	int64_t pid;                     /* the process that made the counters */
	int64_t started;                 /* time(NULL) when they were made */
	uint64_t live_addr;              /* where they are in pid's memory (process_vm_readv) */
	_Atomic int64_t snapshot_ns;     /* CLOCK_REALTIME when this copy was written, 0 never */
	_Atomic int64_t snapshot_pid;    /* and by whom (pid, or a forked worker) */
	_Atomic uint64_t snapshots;      /* copies written so far */
	int64_t listen_overflows_start;  /* TcpExt ListenOverflows of the netns, -1 unknown */
	int64_t listen_drops_start;      /* TcpExt ListenDrops */
	char netns[48];                  /* readlink /proc/self/ns/net */
	_Atomic uint64_t quickack_rearms;
	_Atomic uint64_t setsockopt_failures;
	_Atomic uint64_t app_overrides_refused;
	_Atomic uint64_t retired_listeners; /* closed listeners whose slot went to a new one */
	_Atomic uint64_t retired_accepted;  /* what those had accepted: the rows plus this are
	                                     * every connection ever accepted */
	_Atomic uint32_t listeners_used;   /* high-water mark: slots [0, n) were ever handed out */
	uint32_t pad;
	struct st_stats_listener listener[ST_STATS_LISTENERS];
};

/* Print a stats file as a table.  Returns 0; 3 when there is no such file; or 1
 * (unreadable, not a stats file, another version); a message on stderr for both. */
int st_stats_print(const char *path);


#endif
