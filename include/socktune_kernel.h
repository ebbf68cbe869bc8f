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

/* SO_RCVBUFFORCE refused: SO_RCVBUF was used instead. */
#define ST_FIX_FORCE "grant CAP_NET_ADMIN to use SO_RCVBUFFORCE"

/* Whether word is one of the space-separated words of list. */
int st_has_word(const char *list, const char *word);

/* ---- TCP_DELACK_MAX_US and TCP_RTO_MIN_US (Linux 6.15): microseconds, kept in jiffies ----
 * The kernel converts a value to jiffies rounding up and accepts 2 jiffies .. 200 ms
 * (TCP_TIMEOUT_MIN .. HZ/5); getsockopt reports the jiffies back in microseconds.  An older
 * kernel refuses both with ENOPROTOOPT.  (Debian 12's and musl's headers lack them.) */
#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif
#ifndef TCP_DELACK_MAX_US
#define TCP_DELACK_MAX_US 46
#endif

/* The values that find HZ: the first of them a kernel accepts is 2 jiffies of it (1001 us at
 * HZ=1000, 3334 at 300, 4001 at 250, 10001 at 100; each smaller one is 1 jiffy: EINVAL). */
#define ST_HZ_PROBES {1001, 3334, 4001, 10001}

/* From asked_us, the first value of ST_HZ_PROBES the kernel accepted, and readback_us, what
 * getsockopt reported: *jiffy_us and *hz (readback = 2 jiffies).  -1 when the pair is not
 * that (asked not in (1 jiffy, 2 jiffies]). */
int st_hz_from_readback(long long asked_us, long long readback_us, long long *jiffy_us,
                        long long *hz);

/* What the kernel keeps of us at hz, as getsockopt reports it: rounded up to a jiffy. */
long long st_us_rounded(long long us, long long hz);

/* The least and the greatest value a microsecond option keeps at hz (2 jiffies, 200 ms). */
long long st_us_min(long long hz);
long long st_us_max(long long hz);

/* "rounded up to a jiffy: 4000 us (HZ=250), range 8000..200000 us" (check's host lines). */
void st_us_range_text(long long jiffy_us, long long hz, char *out, size_t n);

#endif
