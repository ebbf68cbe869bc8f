/* socktune: what the library (shim/) and the command (build/socktune) share.
 *
 * Every SOCKTUNE_* variable is listed once, in ST_VARIABLES below: its name, the
 * command-line option that mirrors it, its type and range, its default and a one-line
 * description.  The library's environment reader, the command's option parser, its
 * --help and the documentation test all walk this one list, so they cannot disagree.
 */
#ifndef SOCKTUNE_H
#define SOCKTUNE_H

#include <stddef.h>
#include <stdint.h>

#define ST_VERSION "0.1.0"
#define ST_ENV_PREFIX "SOCKTUNE_"

enum st_type {
	ST_T_SIZE,     /* integer with optional K, M, G suffix (powers of 1024) */
	ST_T_INT,      /* decimal integer in [min, max] */
	ST_T_BOOL,     /* 1/0, yes/no, on/off, true/false */
	ST_T_PORTS,    /* 80,443,8000-8099 */
	ST_T_LOGLEVEL, /* off, error, warn, info, debug */
	ST_T_PATH,     /* a file path; %p becomes the pid */
	ST_T_KEEPALIVE, /* boolean, or IDLE:INTVL:CNT with empty parts allowed ("30::") */
	ST_T_NAME,     /* a congestion control name: [a-z0-9_-], at most 15 characters */
	ST_T_TOS,      /* 0..255 (0x.. allowed) or lowdelay, throughput, reliability, lowcost */
	ST_T_PRECEDENCE, /* policy or app */
	ST_T_USEC,     /* a duration in microseconds: 8ms, 8000us, 0.5s; a bare number is us */
	ST_T_MSEC,     /* a duration in milliseconds: 10s, 1500ms; a bare number is ms */
	ST_T_IFNAME,   /* a network interface name: 1 to 15 characters, no '/', ':' or blank */
};

/* X(id, ENV suffix, option, type, min, max, argument, default, help, socket option)
 * option is the long option of the command (without "--"); booleans take no argument there.
 * The log key of a variable is its option with '_' for '-' (notsent-lowat: notsent_lowat).
 *
 * socket option: what the library does with the value, the one place that says it.
 *   SOCK(level, optname, flags, limit, needs)   a setsockopt of the value (an int, or a name
 *            with ST_O_NAME), on listeners before listen() (flags: where else, and how it
 *            is read back), then read back; limit: the sysctl that caps it; needs: the
 *            capability without which the kernel refuses it (NULL: none)
 *   SOCK6(level, optname, flags, limit, needs, level6, optname6)   another option on IPv6
 *   SOCKOPS(how, what)   set by the cgroup sock_ops program only (socktune --cgroup,
 *            cli/cgroup/): ST_SOCKOPS_SET: bpf_setsockopt(IPPROTO_TCP, what) when a connection
 *            is established; ST_SOCKOPS_REPLY: the reply to callback what (the SYN RTO, the
 *            initial receive window).  A SOCK row with ST_O_SOCKOPS is set by that program too.
 *   OWN      tunes listeners or connections with code of its own (the backlog, quick-ack,
 *            the stats file)
 *   NOSOCK   not a socket setting (logging, scope, modes) */

/* The least TCP_DELACK_MAX_US and TCP_RTO_MIN_US a kernel of HZ=250 takes, both by setsockopt
 * and as TCP_BPF_DELACK_MAX / TCP_BPF_RTO_MIN from a sock_ops program: it rounds the value
 * up to jiffies and refuses less than 2 (TCP_TIMEOUT_MIN), so 4000 us (1 jiffy) is EINVAL
 * and 4001 is kept as 8000 (measured on Linux 6.18, HZ=250).  Validation refuses less, by
 * name, so that no value the parser takes is dropped by the kernel later; --help, the
 * manual and check state this number.  (A kernel of HZ=1000 would take 1001, one of HZ=100
 * only 10001: check says so on such a host.) */
#define ST_US_OPT_MIN 4001
#define ST_US_OPT_MAX 200000

#define ST_VARIABLES(X)                                                                          \
	X(RCVBUF, "RCVBUF", "rcvbuf", ST_T_SIZE, 1, 1073741824, "SIZE", "unset (kernel autotuning)", \
	  "SO_RCVBUF on listeners, set before listen() so the window scale matches", \
	  SOCK(SOL_SOCKET, SO_RCVBUF, ST_O_BUFFER | ST_O_CLIENT | ST_O_SOCKOPS, "net.core.rmem_max", NULL)) \
	X(RCVBUF_FORCE, "RCVBUF_FORCE", "rcvbuf-force", ST_T_BOOL, 0, 1, "", "off",                  \
	  "try SO_RCVBUFFORCE first (CAP_NET_ADMIN, ignores net.core.rmem_max)", \
	  NOSOCK) \
	X(SNDBUF, "SNDBUF", "sndbuf", ST_T_SIZE, 1, 1073741824, "SIZE", "unset (kernel autotuning)", \
	  "SO_SNDBUF on listeners (clamped by net.core.wmem_max)", \
	  SOCK(SOL_SOCKET, SO_SNDBUF, ST_O_BUFFER | ST_O_CLIENT | ST_O_SOCKOPS, "net.core.wmem_max", NULL)) \
	X(BACKLOG, "BACKLOG", "backlog", ST_T_INT, 1, 2147483647, "N", "unset (the app's)",          \
	  "replace the backlog the app passes to listen()", \
	  OWN) \
	X(BACKLOG_MIN, "BACKLOG_MIN", "backlog-min", ST_T_INT, 1, 2147483647, "N", "unset",          \
	  "raise the app's backlog to at least N", \
	  OWN) \
	X(BACKLOG_MAX, "BACKLOG_MAX", "backlog-max", ST_T_INT, 1, 2147483647, "N", "unset",          \
	  "lower the app's backlog to at most N", \
	  OWN) \
	X(NODELAY, "NODELAY", "nodelay", ST_T_BOOL, 0, 1, "", "unset (the app's)",                   \
	  "TCP_NODELAY on listeners (accepted sockets inherit it)", \
	  SOCK(IPPROTO_TCP, TCP_NODELAY, ST_O_CLIENT | ST_O_SOCKOPS, NULL, NULL)) \
	X(QUICKACK, "QUICKACK", "quickack", ST_T_BOOL, 0, 1, "", "off",                              \
	  "TCP_QUICKACK on accepted sockets, re-armed after every receive that returned data", \
	  OWN) \
	X(PORTS, "PORTS", "ports", ST_T_PORTS, 0, 0, "LIST", "every TCP listener",                   \
	  "tune only listeners bound to these local ports, e.g. 80,443,8000-8099", \
	  NOSOCK) \
	X(LOG, "LOG", "log-level", ST_T_LOGLEVEL, 0, 4, "LEVEL", "info",                             \
	  "off, error, warn, info or debug", \
	  NOSOCK) \
	X(LOG_FILE, "LOG_FILE", "log-file", ST_T_PATH, 0, 0, "PATH", "stderr",                       \
	  "append log lines to PATH (%p becomes the pid)", \
	  NOSOCK) \
	X(STATS, "STATS", "stats", ST_T_PATH, 0, 0, "PATH", "off",                                   \
	  "keep live per-listener counters in PATH (%p becomes the pid); read with socktune stats", \
	  OWN) \
	X(KEEPALIVE, "KEEPALIVE", "keepalive", ST_T_KEEPALIVE, 0, 1, "on|IDLE:INTVL:CNT",            \
	  "unset (the app's)", "SO_KEEPALIVE, with TCP_KEEPIDLE:TCP_KEEPINTVL:TCP_KEEPCNT (s, s, count)", \
	  SOCK(SOL_SOCKET, SO_KEEPALIVE, ST_O_CLIENT | ST_O_SOCKOPS, NULL, NULL)) \
	X(USER_TIMEOUT, "USER_TIMEOUT", "user-timeout", ST_T_INT, 0, 2147483647, "MS", "unset",      \
	  "TCP_USER_TIMEOUT in milliseconds", \
	  SOCK(IPPROTO_TCP, TCP_USER_TIMEOUT, ST_O_CLIENT | ST_O_SOCKOPS, NULL, NULL)) \
	X(CONGESTION, "CONGESTION", "congestion", ST_T_NAME, 0, 0, "NAME",                           \
	  "unset (net.ipv4.tcp_congestion_control)", "TCP_CONGESTION, e.g. bbr or cubic", \
	  SOCK(IPPROTO_TCP, TCP_CONGESTION, ST_O_NAME | ST_O_CLIENT | ST_O_SOCKOPS, NULL, NULL)) \
	X(NOTSENT_LOWAT, "NOTSENT_LOWAT", "notsent-lowat", ST_T_SIZE, 1, 1073741824, "SIZE", "unset", \
	  "TCP_NOTSENT_LOWAT: limit unsent data queued in the kernel", \
	  SOCK(IPPROTO_TCP, TCP_NOTSENT_LOWAT, ST_O_CLIENT | ST_O_SOCKOPS, NULL, NULL)) \
	X(DEFER_ACCEPT, "DEFER_ACCEPT", "defer-accept", ST_T_INT, 0, 2147483647, "SECONDS", "unset",   \
	  "TCP_DEFER_ACCEPT on listeners: wake accept() only when data arrived", \
	  SOCK(IPPROTO_TCP, TCP_DEFER_ACCEPT, ST_O_LISTENER_ONLY | ST_O_ROUNDS_UP, NULL, NULL)) \
	X(FASTOPEN, "FASTOPEN", "fastopen", ST_T_INT, 0, 2147483647, "QLEN", "unset",                \
	  "TCP_FASTOPEN queue length on listeners (needs net.ipv4.tcp_fastopen & 2)", \
	  SOCK(IPPROTO_TCP, TCP_FASTOPEN, ST_O_LISTENER_ONLY, NULL, NULL)) \
	X(REUSEPORT, "REUSEPORT", "reuseport", ST_T_BOOL, 0, 1, "", "unset (the app's)",             \
	  "SO_REUSEPORT, set before bind()", \
	  SOCK(SOL_SOCKET, SO_REUSEPORT, ST_O_LISTENER_ONLY | ST_O_BEFORE_BIND, NULL, NULL)) \
	X(TOS, "TOS", "tos", ST_T_TOS, 0, 255, "TOS", "unset",                                       \
	  "IP_TOS / IPV6_TCLASS: a number or lowdelay, throughput, reliability, lowcost", \
	  SOCK6(IPPROTO_IP, IP_TOS, ST_O_CLIENT | ST_O_SOCKOPS, NULL, NULL, IPPROTO_IPV6, IPV6_TCLASS)) \
	X(PRIORITY, "PRIORITY", "priority", ST_T_INT, 0, 6, "N", "unset",                            \
	  "SO_PRIORITY (not inherited: set on each accepted connection)", \
	  SOCK(SOL_SOCKET, SO_PRIORITY, ST_O_EACH_CONN | ST_O_CLIENT | ST_O_SOCKOPS, NULL, NULL)) \
	X(MARK, "MARK", "mark", ST_T_INT, 0, 4294967295LL, "N", "unset",                             \
	  "SO_MARK: a number on the packets sent, for routing rules and firewalls", \
	  SOCK(SOL_SOCKET, SO_MARK, ST_O_CLIENT | ST_O_UNSIGNED | ST_O_SOCKOPS, NULL, "CAP_NET_ADMIN or CAP_NET_RAW")) \
	X(DELACK_MAX, "DELACK_MAX", "delack-max", ST_T_USEC, ST_US_OPT_MIN, ST_US_OPT_MAX, "DURATION", "unset (200 ms)", \
	  "TCP_DELACK_MAX_US (Linux 6.15): the longest an ACK is delayed, e.g. 5ms", \
	  SOCK(IPPROTO_TCP, TCP_DELACK_MAX_US, ST_O_CLIENT | ST_O_ROUNDS_UP | ST_O_SOCKOPS, NULL, NULL)) \
	X(RTO_MIN, "RTO_MIN", "rto-min", ST_T_USEC, ST_US_OPT_MIN, ST_US_OPT_MAX, "DURATION", "unset (200 ms)", \
	  "TCP_RTO_MIN_US (Linux 6.15): the least retransmission timeout; also caps delayed ACKs", \
	  SOCK(IPPROTO_TCP, TCP_RTO_MIN_US, ST_O_CLIENT | ST_O_ROUNDS_UP | ST_O_SOCKOPS, NULL, NULL)) \
	X(RTO_MAX, "RTO_MAX", "rto-max", ST_T_MSEC, 1000, 120000, "DURATION", "unset (120 s)", \
	  "TCP_RTO_MAX_MS (Linux 6.15): the longest retransmission timeout, e.g. 10s", \
	  SOCK(IPPROTO_TCP, TCP_RTO_MAX_MS, ST_O_CLIENT | ST_O_ROUNDS_UP | ST_O_KERNEL_RANGE | \
	       ST_O_SOCKOPS, NULL, NULL)) \
	X(MAXSEG, "MAXSEG", "maxseg", ST_T_INT, 88, 32767, "BYTES", "unset (the route's MTU)", \
	  "TCP_MAXSEG: the largest segment either side sends (the MSS offered)", \
	  SOCK(IPPROTO_TCP, TCP_MAXSEG, ST_O_CLIENT | ST_O_NOT_COMPARED | ST_O_SOCKOPS, NULL, NULL)) \
	X(WINDOW_CLAMP, "WINDOW_CLAMP", "window-clamp", ST_T_SIZE, 1, 1073741824, "SIZE", "unset", \
	  "TCP_WINDOW_CLAMP: the largest receive window advertised", \
	  SOCK(IPPROTO_TCP, TCP_WINDOW_CLAMP, ST_O_CLIENT | ST_O_NOT_COMPARED | ST_O_ROUNDS_UP | ST_O_SOCKOPS, NULL, NULL)) \
	X(SYNCNT, "SYNCNT", "syncnt", ST_T_INT, 1, 127, "N", "unset (net.ipv4.tcp_syn_retries)", \
	  "TCP_SYNCNT on outgoing connections (with --client): SYN retransmissions before connect() fails", \
	  SOCK(IPPROTO_TCP, TCP_SYNCNT, ST_O_CLIENT | ST_O_CLIENT_ONLY | ST_O_SOCKOPS, NULL, NULL)) \
	X(PACING_RATE, "PACING_RATE", "pacing-rate", ST_T_SIZE, 1, 4294967295LL, "BYTES/S", "unset", \
	  "SO_MAX_PACING_RATE: at most this many bytes per second per connection (K, M, G: 1024s)", \
	  SOCK(SOL_SOCKET, SO_MAX_PACING_RATE, ST_O_CLIENT | ST_O_UNSIGNED | ST_O_SOCKOPS, NULL, NULL)) \
	X(FREEBIND, "FREEBIND", "freebind", ST_T_BOOL, 0, 1, "", "unset (the app's)", \
	  "IP_FREEBIND / IPV6_FREEBIND before bind(): bind to an address not (yet) on the host", \
	  SOCK6(IPPROTO_IP, IP_FREEBIND, ST_O_BEFORE_BIND | ST_O_LISTENER_ONLY, NULL, NULL, \
	        IPPROTO_IPV6, IPV6_FREEBIND)) \
	X(TRANSPARENT, "TRANSPARENT", "transparent", ST_T_BOOL, 0, 1, "", "unset (the app's)", \
	  "IP_TRANSPARENT / IPV6_TRANSPARENT before bind(): a transparent proxy", \
	  SOCK6(IPPROTO_IP, IP_TRANSPARENT, ST_O_BEFORE_BIND | ST_O_LISTENER_ONLY, NULL, \
	        "CAP_NET_ADMIN or CAP_NET_RAW", IPPROTO_IPV6, IPV6_TRANSPARENT)) \
	X(BINDTODEVICE, "BINDTODEVICE", "bindtodevice", ST_T_IFNAME, 0, 0, "IFNAME", "unset", \
	  "SO_BINDTODEVICE before bind() (and connect() with --client): one interface only", \
	  SOCK(SOL_SOCKET, SO_BINDTODEVICE, ST_O_BEFORE_BIND | ST_O_NAME | ST_O_CLIENT, NULL, NULL)) \
	X(TTL, "TTL", "ttl", ST_T_INT, 1, 255, "HOPS", "unset (net.ipv4.ip_default_ttl)",           \
	  "IP_TTL / IPV6_UNICAST_HOPS: the hop limit of the packets sent",                        \
	  SOCK6(IPPROTO_IP, IP_TTL, ST_O_CLIENT, NULL, NULL, IPPROTO_IPV6, IPV6_UNICAST_HOPS))     \
	X(INITCWND, "INITCWND", "initcwnd", ST_T_INT, 1, 65535, "N", "unset (10, or the route's)",   \
	  "with --cgroup: the initial congestion window, in segments (TCP_BPF_IW)", \
	  SOCKOPS(ST_SOCKOPS_SET, ST_TCP_BPF_IW)) \
	X(CWND_CLAMP, "CWND_CLAMP", "cwnd-clamp", ST_T_INT, 1, 65535, "N", "unset",                  \
	  "with --cgroup: the largest congestion window, in segments (TCP_BPF_SNDCWND_CLAMP)", \
	  SOCKOPS(ST_SOCKOPS_SET, ST_TCP_BPF_SNDCWND_CLAMP)) \
	X(INITRWND, "INITRWND", "initrwnd", ST_T_INT, 1, 65535, "N", "unset (10 segments)",          \
	  "with --cgroup: the initial receive window offered, in segments (RWND_INIT)", \
	  SOCKOPS(ST_SOCKOPS_REPLY, ST_SOCK_OPS_RWND_INIT)) \
	X(SYN_RTO, "SYN_RTO", "syn-rto", ST_T_USEC, 1000, 120000000, "DURATION", "unset (1 s)",       \
	  "with --cgroup: the retransmission timeout of the SYN and SYN-ACK (TIMEOUT_INIT), e.g. 200ms", \
	  SOCKOPS(ST_SOCKOPS_REPLY, ST_SOCK_OPS_TIMEOUT_INIT)) \
	X(PRECEDENCE, "PRECEDENCE", "precedence", ST_T_PRECEDENCE, 0, 1, "policy|app", "policy",     \
	  "who wins when the app sets a governed option itself", \
	  NOSOCK) \
	X(DRY_RUN, "DRY_RUN", "dry-run", ST_T_BOOL, 0, 1, "", "off",                                 \
	  "log what would be applied, change nothing", \
	  NOSOCK) \
	X(CLIENT, "CLIENT", "client", ST_T_BOOL, 0, 1, "", "off",                                    \
	  "also tune outgoing connections made with connect()", \
	  NOSOCK) \
	X(CLIENT_PORTS, "CLIENT_PORTS", "client-ports", ST_T_PORTS, 0, 0, "LIST", "every port",       \
	  "with --client: tune only connections to these destination ports", \
	  NOSOCK) \
	X(DISABLE, "DISABLE", "disable", ST_T_BOOL, 0, 1, "", "off",                                 \
	  "the library does nothing at all", \
	  NOSOCK)

/* How an option of the table (SOCK) is applied and read back. */
enum st_opt_flags {
	ST_O_BUFFER = 1,        /* the kernel reports twice the request, capped by limit */
	ST_O_LISTENER_ONLY = 2, /* meaningful on listeners only: not checked on accepted sockets */
	ST_O_EACH_CONN = 4,     /* not copied to accepted sockets: set on each one */
	ST_O_BEFORE_BIND = 8,   /* set in bind(), before the real one */
	ST_O_NAME = 16,         /* takes a name (TCP_CONGESTION), not an int */
	ST_O_CLIENT = 32,       /* applied to outgoing connections too (SOCKTUNE_CLIENT) */
	ST_O_UNSIGNED = 64,     /* logged as an unsigned number (SO_MARK) */
	ST_O_ROUNDS_UP = 128,   /* the kernel may keep a larger value (TCP_DEFER_ACCEPT counts
	                         * SYN-ACK retransmissions): more than asked is no clamp */
	ST_O_NOT_COMPARED = 256, /* an accepted socket reports something else (TCP_MAXSEG: the
	                          * MSS in use): not compared with the listener's */
	ST_O_CLIENT_ONLY = 512,  /* outgoing connections only, never listeners */
	ST_O_SOCKOPS = 1024,     /* a cgroup sock_ops program sets it too (bpf_setsockopt takes
	                          * it: net/core/filter.c), on each connection it sees */
	ST_O_KERNEL_RANGE = 2048, /* the row's [min, max] is the kernel's own range (else EINVAL),
	                           * the same from any process: the cgroup mode's hook holds an
	                           * app's value inside it and lets one outside fail */
};

enum st_var_id {
#define ST_ENUM(id, ...) ST_V_##id,
	ST_VARIABLES(ST_ENUM)
#undef ST_ENUM
	ST_V_COUNT
};

struct st_var {
	const char *env;    /* "SOCKTUNE_RCVBUF" */
	const char *option; /* "rcvbuf" */
	enum st_type type;
	long long min, max;
	const char *arg;  /* argument name for --help, "" for flags */
	const char *dflt; /* what happens when unset */
	const char *help;
};

extern const struct st_var st_vars[ST_V_COUNT];

enum st_log_level { ST_LOG_OFF, ST_LOG_ERROR, ST_LOG_WARN, ST_LOG_INFO, ST_LOG_DEBUG };

#define ST_PORTS_WORDS (65536 / 64)

struct st_policy {
	uint64_t set;             /* bit (1 << id) for each variable given a valid value */
	long long num[ST_V_COUNT]; /* sizes, integers, booleans and the log level */
	uint64_t ports[ST_PORTS_WORDS];        /* SOCKTUNE_PORTS */
	uint64_t client_ports[ST_PORTS_WORDS]; /* SOCKTUNE_CLIENT_PORTS */
	int ka_idle, ka_intvl, ka_cnt;         /* SOCKTUNE_KEEPALIVE parts, 0 = leave alone */
	char name[ST_V_COUNT][16];             /* the name variables' values (TCP_CA_NAME_MAX,
	                                        * IFNAMSIZ): SOCKTUNE_CONGESTION, _BINDTODEVICE */
	char log_file[512];                    /* SOCKTUNE_LOG_FILE */
	char stats_file[512];                  /* SOCKTUNE_STATS */
};

enum st_precedence { ST_PRECEDENCE_POLICY, ST_PRECEDENCE_APP };

static inline int st_has(const struct st_policy *p, enum st_var_id id)
{
	return (p->set >> id) & 1;
}

static inline int st_on(const struct st_policy *p, enum st_var_id id)
{
	return st_has(p, id) && p->num[id];
}

static inline int st_port_in(const uint64_t *bits, unsigned port)
{
	return port < 65536 && ((bits[port / 64] >> (port % 64)) & 1);
}

/* Parsers for one value.  Each returns 0, or -1 with a message in err (no variable name:
 * the caller names the variable or option, since only it knows which one was used). */
int st_parse_size(const char *s, long long min, long long max, long long *out, char *err, size_t n);
int st_parse_int(const char *s, long long min, long long max, long long *out, char *err, size_t n);
int st_parse_bool(const char *s, long long *out, char *err, size_t n);
int st_parse_ports(const char *s, uint64_t *bits, char *err, size_t n);
int st_parse_log_level(const char *s, long long *out, char *err, size_t n);
int st_parse_keepalive(const char *s, long long *on, int *idle, int *intvl, int *cnt, char *err,
                       size_t n);
int st_parse_tos(const char *s, long long *out, char *err, size_t n);
int st_parse_name(const char *s, char *out, size_t outlen, char *err, size_t n);
int st_parse_ifname(const char *s, char *out, size_t outlen, char *err, size_t n);
int st_parse_usec(const char *s, long long min, long long max, long long *out, char *err, size_t n);
int st_parse_msec(const char *s, long long min, long long max, long long *out, char *err, size_t n);

/* The unit of a duration (ST_T_USEC: "us", ST_T_MSEC: "ms", the kernel's own for the option),
 * NULL for a value of another type: in a duration's range, its log key (delack_max_us) and
 * what the kernel keeps of it (rounded up to a jiffy); and how many of it make a second. */
static inline const char *st_duration_unit(enum st_type t)
{
	return t == ST_T_USEC ? "us" : t == ST_T_MSEC ? "ms" : NULL;
}
static inline long long st_duration_per_s(enum st_type t)
{
	return t == ST_T_USEC ? 1000000 : t == ST_T_MSEC ? 1000 : 0;
}

/* Parse value s for variable id into p (marks it set).  Returns 0 or -1 with err. */
int st_policy_set(struct st_policy *p, enum st_var_id id, const char *s, char *err, size_t n);

/* Find a variable by its full environment name ("SOCKTUNE_RCVBUF") or by its option name
 * ("rcvbuf").  Returns the id or -1. */
int st_var_by_env(const char *name);
int st_var_by_option(const char *name);

/* The known name nearest a misspelt one, for "did you mean": a variable's full name (by_env:
 * SOCKTUNE_ and NODELEY -> "SOCKTUNE_NODELAY") or an option ("nodeley" -> "nodelay"), at
 * most two typos away (one for a name of 4 letters or less); NULL when none is. */
const char *st_var_suggest(const char *name, int by_env);
/* The edit distance of a and b: insertions, deletions, substitutions and two neighbours
 * swapped, each one (letters compared without case); 99 when either is over 31 bytes. */
int st_edit_distance(const char *a, const char *b);

/* Variables that are not policy but are read by the tools (the command's library path). */
#define ST_ENV_LIBRARY "SOCKTUNE_LIBRARY"

/* Walk an environment block (envp style, NULL-terminated) and fill p from every SOCKTUNE_*
 * entry.  on_error is called once per bad or unknown variable with the variable's name, its
 * value and a message; the rest still applies.  Returns the number of errors. */
typedef void (*st_error_fn)(void *ctx, const char *name, const char *value, const char *msg);
int st_policy_from_env(struct st_policy *p, char *const *envp, st_error_fn on_error, void *ctx);

/* Expand %p in a log file path.  Returns 0, or -1 if it does not fit. */
int st_expand_path(const char *pattern, long pid, char *out, size_t n);

#endif
