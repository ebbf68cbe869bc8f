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
 * a FIFO, a device, a directory or another file is refused: -1 and why in err. */
int journal_open(const char *path, char *err, size_t n);

/* r as one JSON line, a document of its own (the schema, command, then r's members and the
 * time), in one write(2), then fsync: 0, or -1 with errno */
int journal_append(int fd, const char *command, struct rec *r);

/* One change as the journal has it */
struct journal_change {
	char change[17], finding[17], kind[40], option[16], addr[64], when[40];
	int pid, fd, before, after;
	unsigned long long inode, netns;
	int reverted; /* a later line of event "revert" names it */
};

/* The changes in the journal at path, in order (each event "apply"; those a revert line
 * names marked reverted): how many, *out malloc'd; -1 with why in err. */
int journal_read(const char *path, struct journal_change **out, char *err, size_t n);

/* The value of key in one of the journal's lines (a string unquoted, a number as written):
 * 1 found, 0 not.  Pure: what the fuzzer feeds. */
int journal_field(const char *line, const char *key, char *out, size_t n);

/* A change's id: 16 hex digits from what it changed and when (unique per change) */
void journal_change_id(char *out, const char *finding, const char *option, int pid, int fd);

#endif
