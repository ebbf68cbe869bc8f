/* The probe socket (probe.c): a loopback TCP socket made, tuned and read back with raw
 * system calls, past any libsocktune this command itself runs under: check's verdicts, the
 * host's jiffy (hostinfo.c), attach's and doctor's reads, sockcopy's copies.  Internal to
 * cli/. */
#ifndef SOCKTUNE_PROBE_H
#define SOCKTUNE_PROBE_H

#include <sys/socket.h>

#include "socktune_apply.h"

int probe_socket(void);
void probe_close(int fd);
int probe_set(int fd, int level, int opt, const void *val, socklen_t len);
int probe_get(int fd, int level, int opt, void *val, socklen_t *len);
/* The same two for the apply step (common/apply.c): check's probe, attach's copies. */
extern const struct st_sockops cli_raw_ops;
int probe_set_int(int fd, int level, int opt, int v);
int probe_get_int(int fd, int level, int opt, long long *out);
int probe_backlog(long long want, long long *out);

#endif
