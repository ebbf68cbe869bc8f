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
 * for the receive buffer also how to go past it, as fits the capabilities present
 * (cap_net_admin: 1 held, 0 not, -1 unknown; forced: SO_RCVBUFFORCE was asked for): with
 * CAP_NET_ADMIN held, add --rcvbuf-force; asked for and refused, grant CAP_NET_ADMIN. */
void st_fix_limit(int i, long long want, int cap_net_admin, int forced, char *fix, size_t n);
/* Its sysctl part alone ("sysctl -w net.core.rmem_max=N"): where SO_RCVBUFFORCE is no
 * way past the limit (a sock_ops program's bpf_setsockopt takes SO_RCVBUF only). */
void st_fix_sysctl(int i, long long want, char *fix, size_t n);

/* A backlog cut by net.core.somaxconn. */
void st_fix_somaxconn(long long want, char *fix, size_t n);

/* TCP_FASTOPEN on a listener needs bit 2 of net.ipv4.tcp_fastopen (server side). */
int st_fastopen_server_on(long long tcp_fastopen);
void st_fix_fastopen(long long tcp_fastopen, char *fix, size_t n);

/* A congestion control name the kernel refused, from the two lists of the host and module
 * (st_congestion_module: whether tcp_NAME.ko is installed): why and the fix.  Returns the
 * reason in a word: "not-allowed" (available, but a program without CAP_NET_ADMIN may not
 * choose it), "not-loaded" (a module: modprobe, or CAP_NET_ADMIN loads it), "missing"
 * (neither: the fix lists the available ones, never the allowed list). */
const char *st_why_congestion(const char *name, const char *available, const char *allowed,
                              int module, char *why, size_t wn, char *fix, size_t fn);

/* Option i refused with EPERM: the capability it needs. */
void st_fix_denied(int i, char *fix, size_t n);

/* Option i refused with err: whether trying it again on another socket is pointless (the
 * kernel lacks it, or the process lacks the capability it needs), and the fix ("" if none). */
int st_refusal_is_final(int i, int err);
void st_fix_refused(int i, int err, char *fix, size_t n);

/* The same for a socket of protocol (SO_PROTOCOL): an MPTCP socket refuses some options
 * with the ENOPROTOOPT of a kernel that lacks them; the fix says the true cause. */
#define ST_IPPROTO_MPTCP 262
void st_fix_refused_on(int i, int err, int protocol, char *fix, size_t n);

/* --backlog (SOCKTUNE_BACKLOG) replaced a listener's larger backlog with want. */
void st_fix_backlog_lowered(long long want, char *fix, size_t n);

/* A fix as the library logs it, in the two parts of a record (fix, note): the command that
 * runs as printed (a sysctl -w or a modprobe, up to ", or ") into cmd ("" when the fix is
 * prose alone: "grant CAP_NET_ADMIN"), and the prose; the logged text is the two joined by
 * ", " (either alone when the other is ""). */
const char *st_fix_split(const char *fix, char *cmd, size_t n);
/* The same without a copy: the command's length (fix's first bytes), the prose in *note. */
size_t st_fix_command(const char *fix, const char **note);

/* SO_RCVBUFFORCE refused: SO_RCVBUF was used instead. */
#define ST_FIX_FORCE "grant CAP_NET_ADMIN to use SO_RCVBUFFORCE"

/* Whether word is one of the space-separated words of list. */
int st_has_word(const char *list, const char *word);

/* ---- TCP_DELACK_MAX_US and TCP_RTO_MIN_US (Linux 6.15): microseconds, kept in jiffies ----
 * The kernel converts a value to jiffies rounding up and accepts 2 jiffies .. 200 ms
 * (TCP_TIMEOUT_MIN .. HZ/5); getsockopt reports the jiffies back in microseconds.  An older
 * kernel refuses both with ENOPROTOOPT.  (Debian 12's and musl's headers lack them.) */

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
/* The same for v of a unit per_s of which make a second (1000000: us, 1000: ms). */
long long st_jiffies_kept(long long v, long long per_s, long long hz);

/* Whether got, read back on a socket where option i was set to want by a program that cannot
 * see its setsockopt fail (the cgroup mode's bpf_setsockopt), is the kernel's keeping of
 * want: a duration exactly what the kernel keeps of it at hz (rounded up to a jiffy; hz
 * unknown, <= 0: rounded up by less than 10 ms, HZ=100's jiffy), for the default it reads
 * when the set failed is often more than asked (TCP_RTO_MAX_MS: 120000); any other option
 * not short of it (st_short_of). */
int st_took(int i, long long want, long long got, long long hz);

/* The least and the greatest value a microsecond option keeps at hz (2 jiffies, 200 ms). */
long long st_us_min(long long hz);
long long st_us_max(long long hz);

/* "rounded up to a jiffy: 4000 us (HZ=250), takes 4001..200000 us (4001 keeps 8000)"
 * (check's host lines): what the kernel accepts, the least it keeps, and where socktune's
 * floor (ST_US_OPT_MIN) is not this kernel's least, that too.  200 bytes hold any. */
void st_us_range_text(long long jiffy_us, long long hz, char *out, size_t n);

/* ---- the route attribute quickack 1 (RTAX_QUICKACK, CAP_NET_ADMIN) ----
 * On a route, it makes TCP acknowledge at once on every connection that uses it: no delayed
 * ACK, no per-receive cost, established connections included from their next segment.  What
 * counts for a server is its route back to each client's address (on loopback, 127.0.0.1's
 * own /32 route in the local table, not 127.0.0.0/8). */
enum { ST_RTAX_LOCK = 1, ST_RTAX_INITCWND = 11, ST_RTAX_FEATURES = 12, ST_RTAX_RTO_MIN = 13,
       ST_RTAX_INITRWND = 14, ST_RTAX_QUICKACK = 15, ST_RTAX_CC_ALGO = 16, ST_RTAX_COUNT = 18 };
/* What a route carries that no command st_fix_route_quickack writes can repeat. */
enum { ST_R_MULTIPATH = 1, ST_R_ENCAP = 2, ST_R_VIA = 4, ST_R_METRIC = 8, ST_R_EXPIRES = 16,
       ST_R_NODEV = 32 };
#define ST_ADDR_TEXT 46 /* INET6_ADDRSTRLEN */

/* A route as the kernel reports it (an RTM_NEWROUTE answer, decoded by the command). */
struct st_route {
	int family;                     /* AF_INET, AF_INET6 */
	unsigned table;                 /* 255 local, 254 main, 253 default, or another */
	unsigned char type, protocol, scope, dst_len; /* rtm_type (2 local ...), rtm_protocol */
	unsigned char tos;              /* rtm_tos: part of an IPv4 route's key */
	unsigned flags;                 /* rtm_flags (4: onlink) */
	char dst[ST_ADDR_TEXT], gateway[ST_ADDR_TEXT], prefsrc[ST_ADDR_TEXT]; /* "": none */
	char dev[16];                   /* "": none */
	long long priority, nhid, pref, realms; /* -1: absent */
	unsigned metric[ST_RTAX_COUNT]; /* RTA_METRICS: metric[i] when bit i of has_metric */
	unsigned long has_metric;
	char congctl[16];               /* RTAX_CC_ALGO */
	unsigned unrepeated;            /* ST_R_* */
};

/* ip's names: of a route type (2: "local"; "?" past the known ones), of a table (255:
 * "local", 254 "main", 253 "default", else the number). */
const char *st_route_type_name(unsigned type);
void st_route_table_name(unsigned table, char *out, size_t n);

/* Whether r carries quickack 1. */
int st_route_quickack(const struct st_route *r);

/* The route in the words of `ip route`, each attribute a change must repeat
 * ("local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1"), its own
 * quickack left out when without_quickack. */
void st_route_spec(const struct st_route *r, int without_quickack, char *out, size_t n);

/* The fix for a route without quickack: the `ip route change` that adds quickack 1 and keeps
 * the rest (the proto too: the kernel deletes its own routes by it when an address goes);
 * 0.  -1 when no such command exists, why in fix. */
int st_fix_route_quickack(const struct st_route *r, char *fix, size_t n);

/* The same for the initial congestion window: `ip route change ... initcwnd N` keeping the
 * rest (its own initcwnd replaced); every connection the namespace makes over that route
 * starts with it, whatever program.  0, or -1 with why in fix. */
int st_fix_route_initcwnd(const struct st_route *r, unsigned iw, char *fix, size_t n);

#define ST_NOTE_ROUTE_QUICKACK "needs CAP_NET_ADMIN; the route that counts is the server's " \
	"route back to its clients' addresses"

#endif
