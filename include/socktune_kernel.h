/* What the kernel will make of a value, why, and the fix: one place, used by the library's
 * warnings and by `socktune check`, so that both print the same remedy for the same limit.
 * Each fix is one short sentence an operator can paste ("sysctl -w net.core.somaxconn=4096"). */
#ifndef SOCKTUNE_KERNEL_H
#define SOCKTUNE_KERNEL_H

#include <stddef.h>

#include "socktune_opts.h"

/* What reading option i back reports after setting want: a buffer is granted
 * min(want, limit) and reported doubled (bookkeeping overhead), unless forced past the
 * limit (SO_RCVBUFFORCE); limit_value: the sysctl's value, or -1 when unknown. */
long long st_expect(int i, long long want, int forced, long long limit_value);

/* Whether got, read back after setting want, is less than asked: a buffer below double
 * the request, an option the kernel rounds up (TCP_DEFER_ACCEPT) below want, any other not
 * equal (a boolean: not the same truth). */
int st_short_of(int i, long long want, long long got);

/* The fix for option i capped by its sysctl (a buffer): "sysctl -w net.core.rmem_max=N",
 * for the receive buffer also how to go past it. */
void st_fix_limit(int i, long long want, char *fix, size_t n);

/* A backlog cut by net.core.somaxconn. */
void st_fix_somaxconn(long long want, char *fix, size_t n);

/* TCP_FASTOPEN on a listener needs bit 2 of net.ipv4.tcp_fastopen (server side). */
int st_fastopen_server_on(long long tcp_fastopen);
void st_fix_fastopen(long long tcp_fastopen, char *fix, size_t n);

/* A congestion control name the kernel refused: why (not available, or not allowed for
 * programs without CAP_NET_ADMIN) and the fix, from the two lists of the host. */
void st_why_congestion(const char *name, const char *available, const char *allowed, char *why,
                       size_t wn, char *fix, size_t fn);

/* Option i refused with EPERM: the capability it needs. */
void st_fix_denied(int i, char *fix, size_t n);

/* Option i refused with err: whether trying it again on another socket is pointless (the
 * kernel lacks it, or the process lacks the capability it needs), and the fix ("" if none). */
int st_refusal_is_final(int i, int err);
void st_fix_refused(int i, int err, char *fix, size_t n);

/* SO_RCVBUFFORCE refused: SO_RCVBUF was used instead. */
#define ST_FIX_FORCE "grant CAP_NET_ADMIN to use SO_RCVBUFFORCE"

/* Whether word is one of the space-separated words of list. */
int st_has_word(const char *list, const char *word);

#endif
