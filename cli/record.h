/* One record, one writer.  A subcommand fills a record: a tree of typed values whose names
 * come from one table (REC_KEYS below, and the option table's log keys); this layer writes it
 * as JSON or as logfmt (the library's log format: the same names, a group's members flattened
 * as "group.member").  No subcommand writes a key of its own: what the same thing is called
 * and what type it has is decided here, once, and socktune(1) lists this table
 * (`socktune --schema`, checked against every document by t_schema). */
#ifndef SOCKTUNE_RECORD_H
#define SOCKTUNE_RECORD_H

#include <stdio.h>

#include "socktune_apply.h"

/* The version of the documents' schema: every --json document carries it as "schema".  It
 * changes when a key changes name, type or meaning. */
#define REC_SCHEMA_VERSION 1

/* The types of the table.  REC_OBJ is a container (a document, a listener): its members are
 * named as they are.  REC_GROUP is one thing's stages or parts (backlog: app, want,
 * effective): its members are named "group.member" in the table and in logfmt.  Any value may
 * be null: unknown, or unset. */
enum rec_type { REC_OBJ, REC_GROUP, REC_ARR, REC_INT, REC_NUM, REC_BOOL, REC_STR, REC_NULL };

/* X(ID, "name", type, "meaning").  Units are in the names (_bytes, _us, _ms, _s, _pct). */
#define REC_KEYS(X)                                                                              \
	/* ---- every document ---- */                                                          \
	X(SCHEMA, "schema", REC_INT, "the schema version of the document (this table's)")         \
	X(COMMAND, "command", REC_STR, "the subcommand that wrote the document")                  \
	X(VERSION, "version", REC_STR, "socktune's version")                                      \
	X(ERROR, "error", REC_STR, "why the command failed, or why a part could not be read")      \
	X(STATUS, "status", REC_INT, "the command's exit status (socktune(1), EXIT STATUS)")       \
	/* ---- one socket, in every subcommand ---- */                                         \
	X(EVENT, "event", REC_STR, "what happened (a log line's event)")                          \
	X(LEVEL, "level", REC_STR, "a log line's level: error, warn, info, debug")                \
	X(PID, "pid", REC_INT, "a process id")                                                    \
	X(FD, "fd", REC_INT, "a descriptor number in its process")                                \
	X(ADDR, "addr", REC_STR, "an address: a socket's local one with its port (1.2.3.4:80, [::1]:80); a route's or a label's alone")      \
	X(PEER, "peer", REC_STR, "a connection's remote address and port")                        \
	X(PORT, "port", REC_INT, "a TCP port")                                                    \
	X(FAMILY, "family", REC_INT, "the address family: 4 or 6")                                \
	X(NETNS, "netns", REC_INT, "a network namespace, by its inode number")                    \
	X(COMM, "comm", REC_STR, "a process's name (/proc/PID/comm)")                             \
	X(BACKLOG, "backlog", REC_GROUP,                                                           \
	  "a listener's backlog, at each stage (its members below)")                               \
	/* a group's members: a name that starts with '.' follows its group's ("backlog.app") */ \
	X(APP, ".app", REC_INT, "what the program asked for (the backlog it passed to listen())") \
	X(BEFORE, ".before", REC_INT, "in force before attach changed it")                       \
	X(WANT, ".want", REC_INT, "what the policy asked for")                                    \
	X(EFFECTIVE, ".effective", REC_INT, "in force, as the kernel reports it")                 \
	X(NOW, ".now", REC_INT, "a dry run: in force now (effective is what would be)")           \
	/* the buffers are the option table's groups (rcvbuf.want, rcvbuf.effective, ...) */     \
	X(FIX, "fix", REC_ARR, "commands that fix it, each runs as printed")                      \
	X(NOTE, "note", REC_STR, "prose beside the fix: why, what else, what it costs")           \
	X(LIMIT, "limit", REC_STR, "the sysctl that capped a value")                              \
	X(LIMIT_VALUE, "limit_value", REC_INT, "that sysctl's value where the socket is")         \
	/* ---- the library's log ---- */                                                       \
	X(LOG_ACTION, "action", REC_STR,                                                           \
	  "the log: what the library did about it (ignored, skipped, disabled, off, ...)")      \
	X(LOG_DETAIL, "detail", REC_STR, "the log: more about the reason or the error")           \
	X(LOG_PATH, "path", REC_STR, "the log: a file the library writes (log, stats), %p expanded") \
	X(LOG_NOT_LISTED, "not_listed", REC_INT, "the log: configuration errors past those logged") \
	X(LOG_DRY_RUN, "dry_run", REC_BOOL, "the log: SOCKTUNE_DRY_RUN: nothing was set")         \
	X(LOG_RELISTEN, "relisten", REC_BOOL, "the log: listen() again on a socket listening already") \
	X(LOG_UNCHANGED, "unchanged", REC_BOOL,                                                   \
	  "the log: found with every value in place already (a worker a tuned parent exec'd)")  \
	X(LOG_EPHEMERAL, "ephemeral", REC_BOOL,                                                   \
	  "the log: a port the kernel picked (listen() unbound, or in ip_local_port_range)")    \
	X(LOG_APP_KEPT, "app_kept", REC_ARR,                                                      \
	  "the log: the options the program set itself, kept (precedence app), by key")         \
	X(LOG_SLOTS, "slots", REC_INT, "the log: a full table's size (listeners followed, stats slots)") \
	X(LOG_AVAILABLE, "available", REC_ARR,                                                    \
	  "the log: net.ipv4.tcp_available_congestion_control, a name an item")                 \
	X(LOG_ALLOWED, "allowed", REC_ARR,                                                        \
	  "the log: net.ipv4.tcp_allowed_congestion_control, a name an item")                   \
	X(LOG_LISTENER_FD, "listener_fd", REC_INT, "the log: the listener a connection came from")  \
	X(LOG_LISTENER_VALUE, "listener_value", REC_INT, "the log: an option's value on the listener") \
	X(LOG_ACCEPTED_VALUE, "accepted_value", REC_INT,                                          \
	  "the log: the same option on a connection it accepted (the kernel did not copy it)")  \
	X(LOG_PER_CONNECTION, "per_connection", REC_ARR,                                          \
	  "the log: the options set on each accepted connection, by key")                       \
	X(LOG_FIRST, "first", REC_BOOL, "the log: the first of its kind in the process, at info")  \
	X(LOG_FIRST_FOR_PORT, "first_for_port", REC_BOOL,                                         \
	  "the log: the first connection to its peer's port, at info")                          \
	X(LOG_SOCKET, "socket", REC_STR, "the log: a socket's kind: listener, accepted, client")  \
	X(LOG_APP_VALUE, "app_value", REC_INT, "the log: what the program set itself (want: the policy's)") \
	X(LOG_APP_NAME, "app_name", REC_STR, "the log: the same for a name option (want_name)")  \
	X(LOG_SAME, "same", REC_BOOL, "the log: the program set what the policy sets")            \
	X(LOG_CALL, "call", REC_STR, "the log: the exec call (execve, posix_spawn, ...)")        \
	X(LOG_PROGRAM, "program", REC_STR, "the log: the program it runs")                        \
	X(LOG_INHERITED_LISTENERS, "inherited_listeners", REC_INT,                               \
	  "the log: listeners the new program inherits")                                        \
	X(LOG_KEPT, "kept", REC_STR, "the log: what still holds in the new program")              \
	X(LOG_LOST, "lost", REC_STR, "the log: what the new program goes without")               \
	/* ---- check ---- */                                                                   \
	X(CHK_HOST, "host", REC_OBJ, "check: what this host decides (its network namespace's sysctls)") \
	X(CHK_RMEM_MAX, "net.core.rmem_max", REC_INT, "check: the sysctl (bytes; sysctls keep the kernel's names)") \
	X(CHK_WMEM_MAX, "net.core.wmem_max", REC_INT, "check: the sysctl (bytes)")                   \
	X(CHK_SOMAXCONN, "net.core.somaxconn", REC_INT, "check: the sysctl (a backlog cap)")         \
	X(CHK_TCP_RMEM, "net.ipv4.tcp_rmem", REC_ARR, "check: the sysctl, min default max (bytes)")  \
	X(CHK_TCP_WMEM, "net.ipv4.tcp_wmem", REC_ARR, "check: the sysctl, min default max (bytes)")  \
	X(CHK_TCP_MEM, "net.ipv4.tcp_mem", REC_ARR, "check: the sysctl, min pressure max (pages)")   \
	X(CHK_SYN_BACKLOG, "net.ipv4.tcp_max_syn_backlog", REC_INT, "check: the sysctl")             \
	X(CHK_CC_AVAILABLE, "net.ipv4.tcp_available_congestion_control", REC_ARR,                  \
	  "check: the sysctl, a name an item")                                                  \
	X(CHK_CC_ALLOWED, "net.ipv4.tcp_allowed_congestion_control", REC_ARR,                      \
	  "check: the sysctl, a name an item")                                                  \
	X(CHK_CC_DEFAULT, "net.ipv4.tcp_congestion_control", REC_ARR, "check: the sysctl (one name)") \
	X(CHK_SSAI, "net.ipv4.tcp_slow_start_after_idle", REC_INT, "check: the sysctl")              \
	X(CHK_TCP_FASTOPEN, "net.ipv4.tcp_fastopen", REC_INT, "check: the sysctl (bits)")            \
	X(CHK_CAP_NET_ADMIN, "cap_net_admin", REC_BOOL, "check: CAP_NET_ADMIN is held")              \
	X(CHK_DELACK_SUPPORTED, "tcp_delack_max_supported", REC_BOOL,                             \
	  "check: the kernel has TCP_DELACK_MAX_US (Linux 6.15)")                               \
	X(CHK_RTO_MIN_SUPPORTED, "tcp_rto_min_supported", REC_BOOL,                               \
	  "check: the kernel has TCP_RTO_MIN_US (Linux 6.15)")                                  \
	X(CHK_JIFFY_US, "jiffy_us", REC_INT, "check: the jiffy the _us options are rounded up to")   \
	X(CHK_HZ, "hz", REC_INT, "check: the kernel's HZ (jiffies per second)")                       \
	X(CHK_RLIMIT_NOFILE, "rlimit_nofile", REC_GROUP, "check: RLIMIT_NOFILE (descriptors; null: unlimited)") \
	X(CHK_SOFT, ".soft", REC_INT, "check: a limit's soft value")                                 \
	X(CHK_HARD, ".hard", REC_INT, "check: a limit's hard value")                                 \
	X(CHK_PAGE_SIZE_BYTES, "page_size_bytes", REC_INT, "check: the page size")                   \
	X(CHK_OPTIONS, "options", REC_ARR, "check: every configured value, one object each")         \
	X(CHK_OPTION, "option", REC_STR, "an option's name (check: as on the command line; the log, watch --apply, revert: its key)")         \
	X(CHK_VARIABLE, "variable", REC_STR, "an option's SOCKTUNE_* variable")                        \
	X(CHK_VALUE, "value", REC_STR, "its value as configured (text)")                       \
	X(CHK_VERDICT, "verdict", REC_STR,                                                           \
	  "check: ok, note, unchecked, clamped, fallback, ignored or failed")                   \
	X(CHK_IN_FULL, "in_full", REC_BOOL, "check: the value takes effect in full")                 \
	X(CHK_WANT_VALUE, "want", REC_INT, "the value asked for, as a number in the option's unit") \
	X(CHK_EFFECTIVE_VALUE, "effective", REC_INT,                                                 \
	  "what it becomes, as the kernel reports it (check: predicted unless measured)")       \
	X(CHK_WANT_NAME, "want_name", REC_STR, "a name option's value asked for")             \
	X(CHK_EFFECTIVE_NAME, "effective_name", REC_STR, "check: the name in force on a probe socket") \
	X(CHK_MEASURED, "measured", REC_BOOL, "check: effective was read back from a probe socket")  \
	X(CHK_DOUBLED, "kernel_reports_double", REC_BOOL, "check: the kernel reports twice the request") \
	X(CHK_CGROUP_MODE, "cgroup_mode", REC_OBJ, "check: whether this host can run the cgroup mode (socktune --cgroup, attach --cgroup)") \
	X(CHK_USABLE, "usable", REC_BOOL, "check: the cgroup mode can run here (cgroup v2, the privilege, the kernel loads a sock_ops program)") \
	X(CHK_CGROUP2_MOUNT, "cgroup2_mount", REC_STR, "check: where cgroup v2 is mounted (--cgroup-path: that directory, when it is one); null: none") \
	X(CHK_PRIVILEGED, "privileged", REC_BOOL, "check: CAP_BPF and CAP_NET_ADMIN, or CAP_SYS_ADMIN, are held") \
	X(CHK_SOCKOPS_LOADS, "sockops_loads", REC_BOOL, "check: the kernel loaded a two-instruction SOCK_OPS program (closed at once, attached nowhere)") \
	X(CHK_REASON, "reason", REC_STR, "why: the value takes effect, or not, in full (check); a refusal, a skip (the log)")       \
	X(CHK_MEMORY, "memory", REC_OBJ, "check: what a full set of connections may hold")           \
	X(CHK_RCV_PER_CONN, "rcvbuf_per_connection_bytes", REC_INT, "check: receive buffer per connection") \
	X(CHK_RCV_SET, "rcvbuf_configured", REC_BOOL, "check: it is --rcvbuf's (else autotuning's max)") \
	X(CHK_SND_PER_CONN, "sndbuf_per_connection_bytes", REC_INT, "check: send buffer per connection") \
	X(CHK_SND_SET, "sndbuf_configured", REC_BOOL, "check: it is --sndbuf's (else autotuning's max)") \
	X(CHK_WORST_CASE, "worst_case_bytes", REC_INT, "check: per connection times RLIMIT_NOFILE")   \
	X(CHK_TCP_MEM_PAGES, "tcp_mem_max_pages", REC_INT, "check: net.ipv4.tcp_mem's max")          \
	X(CHK_TCP_MEM_BYTES, "tcp_mem_max_bytes", REC_INT, "check: the same in bytes")               \
	X(CHK_ROUTES, "routes", REC_ARR, "check --route: each address's route, one object each")     \
	X(CHK_FOUND, "found", REC_BOOL, "check --route: the kernel has a route to addr")             \
	X(CHK_TABLE, "table", REC_STR, "check --route: the route's table, by name")                  \
	X(CHK_TABLE_ID, "table_id", REC_INT, "check --route: the route's table, by number")          \
	X(CHK_ROUTE_TYPE, "type", REC_STR, "check --route: the route's type (unicast, local, ...)")  \
	X(CHK_DESTINATION, "destination", REC_STR, "check --route: the route's prefix (addr/len)")   \
	X(CHK_GATEWAY, "gateway", REC_STR, "check --route: its gateway")                             \
	X(CHK_DEVICE, "device", REC_STR, "check --route: its device")                                \
	X(CHK_ROUTE, "route", REC_STR, "check --route: the route in ip's words")                     \
	X(CHK_QUICKACK, "quickack", REC_BOOL,                                                  \
	  "quick-ack: armed on the socket (the log); the route carries quickack 1 (check --route)")         \
	X(CHK_ROUTE_INITCWND, "route_initcwnd", REC_INT, "check --route: the route's initcwnd, in segments; null: unset") \
	X(CHK_ROUTE_INITCWND_LOCKED, "route_initcwnd_locked", REC_BOOL, "check --route: the route locks initcwnd (which changes nothing: a socket's TCP_BPF_IW still wins)") \
	X(CHK_KERNEL_INITCWND, "kernel_initcwnd", REC_INT, "check --route: the initial congestion window without a route's or a program's, in segments") \
	X(CHK_CGROUP_INITCWND, "cgroup_initcwnd", REC_INT, "check --cgroup --route: the initcwnd the cgroup mode's program sets; null: it sets none") \
	X(CHK_CGROUP_INITCWND_WINS, "cgroup_initcwnd_wins", REC_BOOL, "check --cgroup --route: a connection with addr gets the program's initcwnd (false: addr is outside --peer); null: it sets none") \
	X(CHK_ROUTE_INITRWND, "route_initrwnd", REC_INT, "check --route: the route's initrwnd, in segments (it can only lower the kernel's window); null: unset") \
	X(CHK_ROUTE_INITRWND_LOCKED, "route_initrwnd_locked", REC_BOOL, "check --route: the route locks initrwnd (which changes nothing: the program's RWND_INIT still wins)") \
	X(CHK_KERNEL_INITRWND_BYTES, "kernel_initrwnd_bytes", REC_INT, "check --route: the most the initial receive window offers without a route's or a program's (the SYN-ACK's 16-bit window)") \
	X(CHK_CGROUP_INITRWND, "cgroup_initrwnd", REC_INT, "check --cgroup --route: the initrwnd the cgroup mode's program answers RWND_INIT with, in segments; null: none") \
	X(CHK_CGROUP_INITRWND_WINS, "cgroup_initrwnd_wins", REC_BOOL, "check --cgroup --route: a connection with addr gets the program's initrwnd (false: addr is outside --peer); null: it sets none") \
	X(CHK_ROUTE_CONGCTL, "route_congctl", REC_STR, "check --route: the route's congestion control (congctl); null: unset") \
	X(CHK_ROUTE_CONGCTL_LOCKED, "route_congctl_locked", REC_BOOL, "check --route: the route locks congctl: the kernel refuses TCP_CONGESTION on its connections (EPERM), a program's too") \
	X(CHK_KERNEL_CONGCTL, "kernel_congctl", REC_STR, "check --route: the congestion control without a route's (net.ipv4.tcp_congestion_control)") \
	X(CHK_CGROUP_CONGCTL, "cgroup_congctl", REC_STR, "check --cgroup --route: the congestion control the cgroup mode's program sets; null: none") \
	X(CHK_CGROUP_CONGCTL_WINS, "cgroup_congctl_wins", REC_BOOL, "check --cgroup --route: a connection with addr gets the program's congestion control (false: the route locks congctl, or addr is outside --peer); null: it sets none") \
	X(CHK_ROUTE_RTO_MIN_US, "route_rto_min_us", REC_INT, "check --route: the route's rto_min; null: unset") \
	X(CHK_ROUTE_RTO_MIN_LOCKED, "route_rto_min_locked", REC_BOOL, "check --route: the route locks rto_min (ip always does): it replaces every socket's; unlocked, the kernel ignores it") \
	X(CHK_KERNEL_RTO_MIN_US, "kernel_rto_min_us", REC_INT, "check --route: the least RTO without a route's or a socket's (net.ipv4.tcp_rto_min_us, else 200 ms)") \
	X(CHK_CGROUP_RTO_MIN_US, "cgroup_rto_min_us", REC_INT, "check --cgroup --route: the rto_min the cgroup mode's program sets; null: none") \
	X(CHK_CGROUP_RTO_MIN_WINS, "cgroup_rto_min_wins", REC_BOOL, "check --cgroup --route: a connection with addr gets the program's rto_min (false: the route locks rto_min, or addr is outside --peer); null: it sets none") \
	X(CHK_CGROUP_PEER_MATCH, "cgroup_peer_match", REC_BOOL, "check --cgroup --route: addr is in one of --peer's prefixes (true without --peer); null: without --cgroup") \
	X(CHK_CGROUP_SCOPE, "cgroup_scope", REC_STR, "check --cgroup --route: the connections the cgroup mode's program tunes (--ports, --client, --peer), in words; null: without --cgroup") \
	X(CHK_CONFIGURED, "configured", REC_INT, "check: values configured")                         \
	X(CHK_NOT_IN_FULL, "not_in_full", REC_INT, "check: of those, values not in effect in full")  \
	/* ---- attach ---- */                                                                  \
	X(SOCKETS, "sockets", REC_ARR, "attach: every socket tuned, one object each")             \
	X(TUNED, "tuned", REC_INT, "attach: sockets tuned")                                       \
	X(REFUSED, "refused", REC_INT, "attach: options the kernel refused, and targets refused") \
	X(WARNINGS, "warnings", REC_ARR, "attach: what was not done in full, one object each")    \
	X(KIND, "kind", REC_STR, "what a warning or finding is (a stable word)")                  \
	X(VIA, "via", REC_STR, "attach, watch --apply, revert: how the socket was reached from outside: pidfd (a pidfd_getfd copy of its descriptor) or bpf (the TCP iterator program, by its cookie)") \
	X(COOKIE, "cookie", REC_INT, "a socket's cookie (sock_diag's idiag_cookie, ss -e's sk:): the iterator's name for it, unique until reboot") \
	X(UID, "uid", REC_INT, "a socket's owner uid, as sock_diag says")                       \
	X(FOUND_BY, "found_by", REC_STR, "attach: where a socket was found: proc (its holder read from /proc/PID/fd) or sock_diag (its port, uid, inode and cgroup alone: no process named)") \
	X(MAP_ID, "map_id", REC_INT, "the iterator: its map's kernel id (gone when the run ends)") \
	X(LINK_ID, "link_id", REC_INT, "the iterator: its link's kernel id (gone when the run ends)") \
	X(ASKED, "asked", REC_INT, "the iterator: sockets asked for, by cookie")                 \
	X(RECORDS, "records", REC_INT, "the iterator: sockets it met and acted on (one record each)") \
	X(NOT_VISITED, "not_visited", REC_INT, "the iterator: sockets asked for that it did not meet (closed meanwhile)") \
	X(TOOK_MS, "took_ms", REC_NUM, "how long it took, in milliseconds")                      \
	X(NETNS_FILE, "netns_file", REC_STR, "the iterator: the network namespace it ran in, as it was opened (/proc/PID/ns/net, /run/netns/NAME, or this process's own)") \
	/* ---- the cgroup mode (socktune --cgroup) ---- */                                     \
	X(CGROUP, "cgroup", REC_STR, "--cgroup: the program's cgroup directory; attach --cgroup, detach: the one the target's listeners were made in; doctor: the one the listener's process is in") \
	X(PROG_ID, "prog_id", REC_INT, "--cgroup, doctor: the kernel's id of a sock_ops program")        \
	X(INSNS, "insns", REC_INT, "--cgroup, doctor: the sock_ops program's instruction count (doctor: as the kernel holds it, after the verifier)")           \
	X(CONN, "conn", REC_STR, "--cgroup: the probe connection's end read: accepted, outgoing")  \
	X(NOT_READABLE, "not_readable", REC_STR, "--cgroup: options the program sets that no socket shows (--initrwnd, --syn-rto): set, not read back, not claimed in force") \
	X(CGROUPS, "cgroups", REC_ARR, "attach --cgroup, detach: each cgroup acted on (or target refused), one object each") \
	X(TARGET, "target", REC_STR, "attach, attach --cgroup, detach: the target as given (PID or :PORT)") \
	X(CGROUP_ID, "cgroup_id", REC_INT, "attach --cgroup, detach: the cgroup's id (its directory's inode; ss -e's cgroup); attach: the cgroup a socket was made in (sock_diag)") \
	X(CGROUP_NOW, "cgroup_now", REC_STR, "attach --cgroup, detach: the cgroup the process is in now, when it moved since it listened") \
	X(REPLACED, "replaced", REC_INT, "attach --cgroup: programs of ours that were there, detached once ours was attached") \
	X(OTHERS, "others", REC_INT, "attach --cgroup, detach: another party's sock_ops programs there, left alone") \
	X(KEPT, "connections_kept", REC_INT, "attach --cgroup: connections open on the listeners now, which keep their values") \
	X(DETACHED, "detached", REC_INT, "detach: programs of ours detached from the cgroup") \
	/* ---- doctor ---- */                                                                  \
	X(SOCKOPS_CGROUPS, "sockops_cgroups", REC_ARR, "doctor: the cgroup v2 of each listener's process (/proc/PID/cgroup) and the sock_ops programs attached to it, one object each") \
	X(PROGRAMS, "programs", REC_ARR, "doctor: the sock_ops programs attached to that cgroup (BPF_PROG_QUERY), one object each") \
	X(PROG_NAME, "prog_name", REC_STR, "doctor: a sock_ops program's name (socktune's own: socktune)") \
	X(PROG_OURS, "socktune_prog", REC_BOOL, "doctor: the program is socktune's (by its record, never its name): its policy is shown") \
	X(POLICY, "policy", REC_OBJ, "doctor: what a socktune program sets, read off the instructions the kernel holds (the option keys; its --ports/--peer scope not shown); null: not readable, error says why") \
	X(WINDOW_S, "window_s", REC_NUM, "doctor: the window watched, in seconds")                \
	X(SAMPLING, "sampling", REC_OBJ, "doctor: what the sampling cost")                         \
	X(LISTENER_SAMPLES, "listener_samples", REC_INT, "doctor: listener samples taken")         \
	X(LISTENER_SAMPLE_US, "listener_sample_us", REC_NUM,                                       \
	  "doctor: one listener sample's mean wall time")                                          \
	X(CONNECTION_SAMPLES, "connection_samples", REC_INT, "doctor: connection samples taken")   \
	X(CONNECTION_SAMPLE_US, "connection_sample_us", REC_NUM,                                   \
	  "doctor: one connection sample's mean wall time")                                        \
	X(MAX_CONNECTIONS_IN_SAMPLE, "max_connections_in_sample", REC_INT,                         \
	  "doctor: the most connections one sample read")                                          \
	X(CPU_MS, "cpu_ms", REC_NUM, "doctor: its own CPU time over the window")                  \
	X(INCOMPLETE_SAMPLES, "incomplete_samples", REC_INT,                                       \
	  "doctor: samples the kernel refused or cut short")                                       \
	X(DUMPS_CUT_SHORT, "dumps_cut_short", REC_INT,                                             \
	  "doctor: dumps the kernel flagged interrupted (sockets came and went)")                  \
	X(INTERRUPTED, "interrupted", REC_BOOL, "doctor: a signal ended the window early")         \
	X(NAMESPACES, "namespaces", REC_ARR,                                                       \
	  "doctor: the network namespaces watched, one object each")                               \
	X(OURS, "ours", REC_BOOL, "doctor: the namespace is doctor's own")                         \
	X(SOMAXCONN, "somaxconn", REC_INT, "net.core.somaxconn where the listener is")            \
	X(RMEM_MAX_BYTES, "rmem_max_bytes", REC_INT, "net.core.rmem_max where the socket is")      \
	X(WMEM_MAX_BYTES, "wmem_max_bytes", REC_INT, "net.core.wmem_max where the socket is")      \
	X(COUNTERS, "counters", REC_OBJ,                                                           \
	  "doctor: the namespace's TcpExt counters' change over the window")                       \
	/* the counters, in doctor.h's C_* order (TcpExt's names) */                            \
	X(LISTEN_OVERFLOWS, "ListenOverflows", REC_INT,                                            \
	  "TcpExt: connections the accept queue had no room for")                                  \
	X(LISTEN_DROPS, "ListenDrops", REC_INT, "TcpExt: connection attempts a listener dropped")  \
	X(TCP_SYN_RETRANS, "TCPSynRetrans", REC_INT, "TcpExt: SYNs and SYN-ACKs sent again")      \
	X(RETRANS_SEGS, "RetransSegs", REC_INT, "Tcp: segments sent again")                       \
	X(TCP_TIMEOUTS, "TCPTimeouts", REC_INT, "TcpExt: retransmit timeouts")                    \
	X(TCP_RCVQ_DROP, "TCPRcvQDrop", REC_INT, "TcpExt: received segments dropped, no memory")  \
	X(PRUNE_CALLED, "PruneCalled", REC_INT, "TcpExt: receive queues pruned for memory")        \
	X(LISTENERS_NOT_FOLLOWED, "listeners_not_followed", REC_INT,                               \
	  "doctor: listeners past its table's cap")                                                \
	X(LISTENERS, "listeners", REC_ARR, "the listeners: doctor's watched, a stats file's")      \
	X(OWNERS, "owners", REC_ARR, "doctor: the processes holding a listener (pid, fd, comm)")  \
	X(OWNERS_NOT_SHOWN, "owners_not_shown", REC_INT, "doctor: holders past those listed")     \
	X(QUEUE_NOW, "queue_now", REC_INT, "the accept queue now (doctor: at the window's end)") \
	X(QUEUE_PEAK, "queue_peak", REC_INT,                                                       \
	  "the deepest accept queue sampled (doctor: in the window)")                              \
	X(QUEUED_SAMPLES, "queued_samples", REC_INT,                                               \
	  "doctor: samples that saw a connection waiting in the queue")                            \
	X(DROPPED, "dropped", REC_INT,                                                             \
	  "doctor: connection attempts the listener dropped over the window")                      \
	X(DROPPED_WHILE_SEEN, "dropped_while_seen", REC_INT,                                       \
	  "doctor: ... while it was seen (it closed meanwhile)")                                   \
	X(NODELAY_WHY, "nodelay_why", REC_STR, "doctor: why TCP_NODELAY could not be read")       \
	X(CLOSED, "closed", REC_BOOL, "the listener was closed (doctor: during the window)")     \
	X(CONNECTIONS_SEEN, "connections_seen", REC_INT,                                           \
	  "doctor: connections seen on the listener over the window")                              \
	X(CONNECTIONS, "connections", REC_OBJ,                                                     \
	  "doctor: the connections (count, not_followed, worst)")                                  \
	X(CONN_COUNT, "count", REC_INT,                                                            \
	  "doctor: connections seen; --cgroup's event=app-override: the program's setsockopt calls whose value the hook replaced") \
	X(NOT_FOLLOWED, "not_followed", REC_INT, "doctor: connections past its table's cap")      \
	X(WORST, "worst", REC_ARR, "doctor: the connections, worst first, one object each")       \
	X(STATE, "state", REC_STR, "a TCP state: established, close-wait, ...")                   \
	X(SAMPLES, "samples", REC_INT, "samples taken (doctor: that saw the connection)")        \
	X(RTT_MS, "rtt_ms", REC_NUM, "the smoothed round-trip time (tcpi_rtt)")                   \
	X(MAX_RTT_MS, "max_rtt_ms", REC_NUM, "the largest smoothed round-trip time seen")          \
	X(MIN_RTT_MS, "min_rtt_ms", REC_NUM, "the path's fastest round trip (tcpi_min_rtt)")      \
	X(ATO_MS, "ato_ms", REC_NUM, "the largest delayed-ACK timeout seen (tcpi_ato)")            \
	X(RCV_RTT_MS, "rcv_rtt_ms", REC_NUM, "the receiver's round-trip estimate (tcpi_rcv_rtt)") \
	X(RETRANS, "retrans", REC_INT, "segments sent again over the window")                     \
	X(BUSY_MS, "busy_ms", REC_NUM, "time spent sending over the window (tcpi_busy_time)")     \
	X(RWND_LIMITED_PCT, "rwnd_limited_pct", REC_NUM,                                           \
	  "share of busy time limited by the peer's receive window")                               \
	X(SNDBUF_LIMITED_PCT, "sndbuf_limited_pct", REC_NUM,                                       \
	  "share of busy time limited by the send buffer")                                         \
	X(DELIVERY_RATE, "delivery_rate_bytes_per_s", REC_INT,                                     \
	  "the last delivery rate measured (tcpi_delivery_rate)")                                  \
	X(UNSENT_BYTES, "unsent_bytes", REC_INT,                                                   \
	  "bytes written, not yet sent (tcpi_notsent_bytes)")                                      \
	X(SEGS_IN, "segs_in", REC_INT, "data segments received over the window")                  \
	X(SEGS_OUT, "segs_out", REC_INT, "data segments sent over the window")                    \
	X(FINDINGS_NOT_SHOWN, "findings_not_shown", REC_INT, "doctor: findings past its cap")     \
	X(FINDINGS, "findings", REC_ARR, "doctor: what it found, one object each")                \
	X(SEVERITY, "severity", REC_STR, "a finding's: info, warning, critical")                  \
	X(CERTAINTY, "certainty", REC_STR, "a finding's: high, medium, low")                      \
	X(SUMMARY, "summary", REC_STR, "a finding, in a sentence")                                \
	X(EVIDENCE, "evidence", REC_OBJ, "a finding's numbers")                                   \
	X(LISTENER_PIDS, "listener_pids", REC_ARR, "the pids holding the listener")               \
	X(CONNECTION_PIDS, "connection_pids", REC_ARR, "the pids holding its connections")        \
	X(CONNECTION_PIDS_INCOMPLETE, "connection_pids_incomplete", REC_BOOL,                      \
	  "more pids hold its connections than listed")                                            \
	X(SHOWING, "showing", REC_INT, "connections that show the finding")                       \
	X(SEGS_OUT_PER_S, "segs_out_per_s", REC_NUM,                                               \
	  "data segments sent a second, the worst connection")                                     \
	X(LISTENER_NODELAY, "listener_nodelay", REC_BOOL,                                          \
	  "the listener's TCP_NODELAY (connections inherit it)")                                   \
	X(CONNECTION_NODELAY, "connection_nodelay", REC_BOOL,                                      \
	  "a connection's own TCP_NODELAY, as read")                                               \
	X(ACKS_ALONE_PER_S, "acks_alone_per_s", REC_NUM,                                           \
	  "segments without data the server sent a second")                                        \
	X(BYTES_PER_SEG_IN, "bytes_per_seg_in", REC_NUM,                                           \
	  "bytes a data segment received, on average")                                             \
	X(BYTES_PER_SEG_OUT, "bytes_per_seg_out", REC_NUM,                                         \
	  "bytes a data segment sent, on average")                                                 \
	X(SHARE_PCT, "share_pct", REC_NUM, "share of busy time limited, the worst connection")    \
	X(LIMITED_MS, "limited_ms", REC_NUM, "time limited, the worst connection")                \
	X(SND_WND_BYTES, "snd_wnd_bytes", REC_INT, "the peer's receive window (tcpi_snd_wnd)")    \
	X(RTO_MS, "rto_ms", REC_NUM, "the largest retransmit timeout in force (tcpi_rto)")        \
	X(RTO_EVENTS, "rto_events", REC_INT, "retransmit timeouts (tcpi_total_rto, Linux 6.7)")   \
	X(MIN_RTO_MS, "min_rto_ms", REC_NUM,                                                       \
	  "the smallest retransmit timeout among those that fired")                                \
	X(SNDBUF_LIMITED_CONNECTIONS, "sndbuf_limited_connections", REC_INT,                       \
	  "connections that waited for room to send")                                              \
	X(CONNECTIONS_OPEN, "connections_open", REC_INT, "connections open at the window's end")  \
	X(BUFFERS_MIB, "buffers_mib", REC_NUM, "their buffers' sizes, summed, in MiB")            \
	X(IN_USE_MIB, "in_use_mib", REC_NUM, "what their buffers hold, in MiB")                   \
	X(TCP_MEM_HIGH_MIB, "tcp_mem_high_mib", REC_NUM,                                           \
	  "net.ipv4.tcp_mem's third number, in MiB")                                               \
	X(CONNECTIONS_CLOSED, "connections_closed", REC_INT,                                       \
	  "connections of the listener the kernel freed over the window (its destroy notifications)") \
	X(FAR_CONNECTIONS, "far_connections", REC_INT,                                             \
	  "... of them with a round trip (min_rtt) of 10 ms or more")                              \
	X(NEAR_CONNECTIONS, "near_connections", REC_INT, "... and under 10 ms")                    \
	X(CLOSE_OVERRUNS, "close_overruns", REC_INT,                                               \
	  "times the kernel dropped destroy notifications (a full buffer): connections not counted") \
	X(RESPONSE_BYTES, "response_bytes", REC_INT,                                               \
	  "a connection's one response, the 90th percentile of those that show it")                \
	X(RESPONSE_SEGS, "response_segs", REC_INT, "... in segments")                              \
	X(INITIAL_WINDOW, "initial_window", REC_INT,                                               \
	  "the initial congestion window in force, in segments")                                   \
	X(INITIAL_WINDOW_FROM, "initial_window_from", REC_STR,                                     \
	  "where it comes from: cgroup (a socktune program's --initcwnd), route (initcwnd), default (10)") \
	X(FLIGHTS, "flights", REC_INT,                                                             \
	  "round trips slow start needs to send that response at that initial window")             \
	X(ROUND_TRIPS, "round_trips", REC_NUM,                                                     \
	  "round trips the responses took, measured: busy time over min_rtt, the median")          \
	X(COST_MS, "cost_ms", REC_NUM, "the round trips past the first, at min_rtt: what each pays") \
	X(RETRANS_PCT, "retrans_pct", REC_NUM, "segments sent again, in percent of those sent")   \
	X(CONGESTION_FROM, "congestion_from", REC_STR,                                             \
	  "where the congestion control's name comes from: connection, cgroup, listener, namespace") \
	X(SSTHRESH_CUT, "ssthresh_cut", REC_INT,                                                   \
	  "connections whose slow-start threshold a loss cut (a loss-based congestion control's reaction)") \
	X(BBR_AVAILABLE, "bbr_available", REC_BOOL,                                                \
	  "bbr is in net.ipv4.tcp_available_congestion_control")                                   \
	X(BODY_BYTES, "body_bytes", REC_INT,                                                       \
	  "the largest request body received on a connection that shows it")                       \
	X(UNREAD_BYTES, "unread_bytes", REC_INT,                                                   \
	  "bytes received that the program had not read, when the window closed")                  \
	X(RCV_WND_BYTES, "rcv_wnd_bytes", REC_INT, "the window advertised then (tcpi_rcv_wnd)")    \
	X(BDP_BYTES, "bdp_bytes", REC_INT,                                                         \
	  "the peer's fastest pace seen between two samples, times min_rtt")                       \
	/* ---- stats ---- */                                                                   \
	X(STS_FILES, "files", REC_ARR, "stats: every FILE given, one object each")                    \
	X(STS_FILE, "file", REC_STR, "stats: the stats file's path, as given")                        \
	X(STS_FILE_VERSION, "file_version", REC_INT, "stats: the stats file's format version")        \
	X(STS_RUNNING, "running", REC_BOOL, "stats: the process that made the counters runs")        \
	X(STS_STARTED_S, "started_s", REC_INT, "stats: when the counters were made (Unix time, s)")  \
	X(STS_SOURCE, "source", REC_STR, "stats: live (read from the process now) or snapshot; --cgroup: probe (the probe connection) or app (the program's own first connection)")     \
	X(STS_READ_FROM_PID, "read_from_pid", REC_INT, "stats: live: the process read")              \
	X(STS_SNAPSHOT_PID, "snapshot_pid", REC_INT, "stats: the process that wrote the snapshot")   \
	X(STS_SNAPSHOT_S, "snapshot_s", REC_NUM, "stats: when the snapshot was written (Unix time, s)") \
	X(STS_SNAPSHOT_AGE_S, "snapshot_age_s", REC_NUM, "stats: how long ago it was written (s)")   \
	X(STS_PROCESS, "process", REC_OBJ, "stats: the process's counters")                          \
	X(STS_QUICKACK_REARMS, "quickack_rearms", REC_INT, "stats: TCP_QUICKACK re-arms")            \
	X(STS_SETSOCKOPT_FAILURES, "setsockopt_failures", REC_INT, "stats: setsockopt calls refused") \
	X(STS_OVERRIDES_REFUSED, "app_overrides_refused", REC_INT,                                 \
	  "stats: the program's setsockopt of a governed option, undone; detach: those the cgroup hook refused") \
	X(STS_RETIRED_LISTENERS, "retired_listeners", REC_INT, "stats: closed listeners, slot reused") \
	X(STS_RETIRED_ACCEPTED, "retired_accepted", REC_INT, "stats: what those had accepted")       \
	X(STS_OVERFLOWS_START, "listen_overflows_start", REC_INT, "stats: TcpExt ListenOverflows at start") \
	X(STS_OVERFLOWS_NOW, "listen_overflows_now", REC_INT, "stats: and now (null: another netns)") \
	X(STS_OVERFLOWS_DELTA, "listen_overflows_delta", REC_INT, "stats: the difference")           \
	X(STS_DROPS_START, "listen_drops_start", REC_INT, "stats: TcpExt ListenDrops at start")      \
	X(STS_DROPS_NOW, "listen_drops_now", REC_INT, "stats: and now (null: another netns)")        \
	X(STS_DROPS_DELTA, "listen_drops_delta", REC_INT, "stats: the difference")                   \
	X(STS_SLOT, "slot", REC_INT, "stats: the listener's slot in the file")                        \
	X(STS_ACCEPTED, "accepted", REC_INT, "stats: connections accepted on the listener")          \
	X(STS_QUEUE_LAST, "queue_last", REC_INT, "stats: the accept queue at the latest sample")     \
	X(STS_QUEUE_NOW_SOURCE, "queue_now_source", REC_STR,                                    \
	  "stats: kernel (read now), or last-sample when the kernel could not be read")         \
	X(STS_KERNEL_NOTE, "kernel_note", REC_STR,                                              \
	  "stats: why the kernel's listeners could not be read (null: they were)")              \
	X(STS_ADOPTED, "adopted", REC_BOOL, "stats: an inherited listener, tuned at its first accept") \
	/* ---- watch ---- */                                                                   \
	X(WCH_UNIT, "unit", REC_STR, "watch: the systemd unit of a listener's holder (its cgroup's .service)") \
	X(WCH_CONTAINER, "container", REC_STR, "watch: the container id of a listener's holder (its cgroup)") \
	X(WCH_POD, "pod", REC_STR, "watch: the Kubernetes pod uid of a listener's holder (its cgroup)") \
	X(WCH_POD_NAME, "pod_name", REC_STR, "watch: the Kubernetes pod's name (the hostname the kubelet gives its containers, /etc/hostname)") \
	X(WCH_RTT_QUANTILE, "connection_quantile", REC_NUM, "watch: which of a listener's connections' RTTs a series is: the q-quantile over them by nearest rank (0 the least, 1 the most)") \
	X(WCH_ID, "id", REC_STR, "watch: a finding's stable id (from its kind, netns, addr and port)") \
	X(WCH_FLAPS, "flaps", REC_INT, "watch: times a finding came back soon after it cleared")     \
	X(WCH_CLEARS_AFTER, "clears_after_windows", REC_INT,                                    \
	  "watch: quiet windows a flapping finding takes to clear (doubled at each flap)")      \
	/* ---- watch --apply's journal, socktune revert ---- */                             \
	X(JRN_CHANGE, "change", REC_STR, "watch --apply, revert: a change's id in the journal (16 hex digits)") \
	X(JRN_FINDING, "finding", REC_STR, "watch --apply, revert: the id of the finding a change cures (watch's id)") \
	X(JRN_BEFORE, "before", REC_INT, "watch --apply, revert: the value read back before the change") \
	X(JRN_AFTER, "after", REC_INT, "watch --apply, revert: the value read back after the change") \
	X(JRN_TIME, "time", REC_STR, "watch --apply, revert: when a journal line was written (RFC 3339, UTC)") \
	X(JRN_INODE, "inode", REC_INT, "attach, watch --apply, revert: the socket's inode (a descriptor number reused for another socket is not touched)") \
	X(JRN_PID_START, "pid_start", REC_INT, "watch --apply, revert: the start time of pid (/proc/PID/stat field 22, clock ticks after boot): a pid another process took since is not touched") \
	X(JRN_CONNECTIONS, "connections_reverted", REC_INT, "revert: connections the listener accepted since the change, which inherited its value, set back too") \
	X(JRN_HELD_BY, "held_by", REC_INT, "revert: the process that holds the socket now, its journalled one gone (a child it was handed to, its workers)") \
	X(JRN_JOURNAL, "journal", REC_STR, "watch --apply, revert: the journal's path")             \
	X(JRN_SET, "set", REC_INT, "watch: the value watch set that the socket no longer has (a back-off)") \
	X(JRN_NOW, "now", REC_INT, "watch: the value the socket has now (a back-off)")              \
	/* (end) */

#define REC_ENUM(id, name, type, meaning) K_##id,
enum rec_key { REC_KEYS(REC_ENUM) K_COUNT };
#undef REC_ENUM

/* The option table's keys follow: option i's key is K_OPTION + i, its name the library's log
 * key (st_opt_key).  A buffer or a duration is a group (rcvbuf.want, rcvbuf.effective,
 * rcvbuf.now in a dry run; delack_max_us.want ...), a name a string, a flag a boolean, any
 * other option an integer. */
#define K_OPTION 1000

struct rec_key_info {
	const char *name;
	enum rec_type type;
	const char *meaning;
};
extern const struct rec_key_info rec_keys[K_COUNT];

/* Key k's name and type (k < K_COUNT, or an option's K_OPTION + i; NULL / REC_NULL for
 * none).  An option group's members ("rcvbuf.want") come from rec_option_member. */
const char *rec_key_name(int k, char *buf, size_t n);
enum rec_type rec_key_type(int k);

/* A record: a tree of values.  rec_new gives the document's root (an object); members are
 * added in order and written in that order.  Out of memory, a record keeps what it has and
 * is written with "error": "out of memory"; no call fails. */
struct rec;
struct rec *rec_new(void);
void rec_free(struct rec *r);

/* Members of an object or a group (k), or items of an array (k ignored).  A key written with
 * the wrong type is written anyway (t_schema names it). */
struct rec *rec_obj(struct rec *parent, int k);
struct rec *rec_group(struct rec *parent, int k);
struct rec *rec_arr(struct rec *parent, int k);
void rec_int(struct rec *parent, int k, long long v);
void rec_num(struct rec *parent, int k, double v, int decimals);
void rec_bool(struct rec *parent, int k, int v);
void rec_str(struct rec *parent, int k, const char *s); /* s NULL: null */
void rec_null(struct rec *parent, int k);
/* An integer that is unknown when negative (the kernel's -1, an unread value): null then. */
void rec_known(struct rec *parent, int k, long long v);
/* A copy of record src (its members, as they are) as parent's member k, of src's type: a
 * part filled apart (a finding's evidence) put into the document.  NULL src: null. */
void rec_copy(struct rec *parent, int k, const struct rec *src);
/* src's members (or items) added to parent's, in their order */
void rec_copy_members(struct rec *parent, const struct rec *src);
/* The same, but for the members of keys skip_a and skip_b (-1: none) */
void rec_copy_members_except(struct rec *parent, const struct rec *src, int skip_a, int skip_b);

/* What became of option i (st_apply_one's outcome), and a listener's backlog at its stages:
 * the walks of include/socktune_apply.h, which the library's log line takes too, so both
 * say the same keys. */
void rec_outcome(struct rec *parent, const struct st_policy *p, int i, const struct st_outcome *o,
                 const char *name);
void rec_backlog(struct rec *parent, const struct st_backlog_said *b);

/* The writers.  JSON: one document, members of the root on a line each, arrays of objects an
 * item a line.  logfmt: "name=value" pairs separated by a space, groups flattened ("backlog.app=5"),
 * arrays as name.0=, name.1=, booleans 1 and 0, nulls left out, a string quoted when it holds a
 * space, a quote, '=' or nothing, its quotes and backslashes escaped, control bytes as '?'. */
void rec_write_json(FILE *f, const struct rec *r);
void rec_write_logfmt(FILE *f, const struct rec *r);
/* The same JSON on one line (a stream of documents: stats --json --watch, one a round). */
void rec_write_json_line(FILE *f, const struct rec *r);
/* One text line on f: prefix, the record in logfmt and a newline, put together first and
 * written at once (lines of a process that writes several do not interleave), then flushed.
 * Nothing when memory runs out. */
void rec_say(FILE *f, const char *prefix, const struct rec *r);

/* A failure under --json: {"schema": 1, "command": CMD, "error": MSG, "status": STATUS}, one
 * line on f. */
void rec_error_json(FILE *f, const char *command, const char *msg, int status);

/* socktune --schema: the table, a key a line ("name type meaning"), the options' keys too. */
void rec_print_schema(FILE *f);

#endif
