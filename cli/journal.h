/* The journal of what watch --apply changed, and what socktune revert reads back from it:
 * one JSON line per change, appended, fsync'd (journal.c).  Internal to cli/. */
#ifndef SOCKTUNE_JOURNAL_H
#define SOCKTUNE_JOURNAL_H

#include <stddef.h>

#include "record.h"

/* The journal when --journal is not given: $STATE_DIRECTORY/journal.jsonl (systemd's
 * StateDirectory=socktune; its first directory when it lists several), else
 * /var/lib/socktune/journal.jsonl */
const char *journal_default(char *buf, size_t n);

/* Opened for appending: made (O_EXCL, 0600) with its first line when absent, else only a
 * regular file that starts with a journal's first line (one this command made), owned by
 * this user or root and writable by its owner alone.  A symlink,
 * a FIFO, a device, a directory or another file is refused: -1 and why in err.  The path is
 * opened once, and every check made on the descriptor (fstat, pread): the file checked is
 * the file read and written. */
int journal_open(const char *path, char *err, size_t n);
/* The same for a journal that must exist already: JOURNAL_READ (read only: a listing),
 * JOURNAL_APPEND (read and appended: revert) */
enum { JOURNAL_READ, JOURNAL_APPEND, JOURNAL_MAKE };
int journal_open_existing(const char *path, int how, char *err, size_t n);

/* The longest line the reader takes; a longer one is said, never acted on */
#define JOURNAL_LINE_MAX 65536
#define JOURNAL_LINE_MAX_S "65536"

/* r as one JSON line, a document of its own (the schema, command, then r's members and the
 * time), in one write(2), then fsync: 0, or -1 with errno */
int journal_append(int fd, const char *command, struct rec *r);

/* One change as the journal has it */
struct journal_change {
	char change[17], finding[17], kind[40], option[16], addr[64], peer[64], when[40];
	int pid, fd, before, after;
	unsigned long long inode, netns;
	unsigned long long start; /* pid's start time (/proc/PID/stat field 22): pid reuse */
	char via[8];              /* how it was changed: "pidfd" (a line without: the same), "bpf" */
	unsigned long long cookie; /* the socket's sock_diag cookie (0: not journalled) */
	long line;                /* its line in the journal */
	int reverted;             /* a later line of event "revert" names it */
	/* why nothing may be done to it: a field missing (a line cut by a full disk or a
	 * truncate, one longer than JOURNAL_LINE_MAX, a line of an older socktune); NULL: whole */
	const char *unusable;
};

/* The changes in the journal open on fd (journal_open_existing), in order: each line of event
 * "apply", those a revert line names marked reverted, and each line that is not one whole
 * JSON object (unusable says so): how many, *out malloc'd; -1 with why in err.  Read
 * through fd alone (pread), never the path again. */
int journal_read(int fd, struct journal_change **out, char *err, size_t n);

/* The value of key in one of the journal's lines (a string unquoted, a number as written):
 * 1 found, 0 not.  Pure: what the fuzzer feeds. */
int journal_field(const char *line, const char *key, char *out, size_t n);

/* A change's id: 16 hex digits from what it changed and when (unique per change) */
void journal_change_id(char *out, const char *finding, const char *option, int pid, int fd);

#endif
