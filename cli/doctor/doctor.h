/* socktune doctor: what its parts share.  diag.c reads sockets through NETLINK_SOCK_DIAG,
 * doctor.c samples the listeners and their connections over the window, findings.c turns
 * the numbers into findings with their evidence and fixes, doctor_out.c prints them.
 * Internal to cli/.  (The sock_diag and holder readers: host/diag.h; the record of a
 * window, struct shared_window: findings/window.h; the rules: findings/findings.h.) */
#ifndef SOCKTUNE_DOCTOR_H
#define SOCKTUNE_DOCTOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "record.h"
#include "host/diag.h"
#include "findings/window.h"
#include "findings/findings.h"

/* ---- startcmd.c: how a running process would be started again ---- */

/* From /proc/PID: cmdline checked against exe (a title the program wrote over its argv is
 * no command), cwd, and for a VM its launcher exec'd in the same process (Erlang's erl). */
void doc_start_of(int pid, struct doc_start *out);

/* ---- doctor.c: the window's samples (into window.h's record) ---- */

extern const char *const doc_counter_names[C_COUNT]; /* TcpExt's names of C_* */

/* The listener a connection was accepted from: same namespace and port, same address or a
 * wildcard one (an IPv6 wildcard listener takes IPv4 connections too, as IPv6 sockets); -1 */
int doc_listener_of(const struct shared_window *d, int ns, const struct diag_sock *s);
/* The connection of cookie among those followed (add: made when new; NULL past memory) */
struct doc_conn *doc_conn_find(struct shared_window *d, unsigned long long cookie, int add);

/* doctor_close.c: the namespaces' destroy notifications over the window (host/diagclose.c):
 * subscribed at its start, read at each tick and at its end, each freed connection of a
 * listener into its doc_closed; then what the path rules need beside them (the initial
 * window in force for the far peers, their route, the namespaces' congestion controls) */
void doc_closes_open(struct shared_window *d);
void doc_closes_read(struct shared_window *d);
void doc_closes_end(struct shared_window *d);

/* netns.c: the namespace of pid (0: ours) among d's, added with its sock_diag socket and
 * limits when new; its index, or -1 */
int doc_ns_add(struct shared_window *d, int pid);
void doc_ns_counters(const struct doc_ns *ns, long long *out); /* now, -1 each unreadable */
/* netns.c: a process of another network namespace than ours holding a listener on port (the
 * first found), and that namespace's inode; 0 when none is */
int doc_port_elsewhere(unsigned port, unsigned long long *ns_ino);
/* Each listener's route_fix: the route, in its namespace, to the peer of its last connection
 * seen, when that route lacks quickack (check --route's lookup) */
void doc_routes_back(struct shared_window *d);

/* doctor_look.c: at the window's end, each connection's holder (pid, fd) and the TCP_NODELAY
 * of the listeners and of the worst connections */
void doc_look_at_holders(struct shared_window *d);
/* doctor_look.c: during the window, after a connection sample, the TCP_NODELAY of the
 * connections open in it (their holders found among the listeners' processes) */
void doc_look_during(struct shared_window *d);

enum cli_status doctor_parse(int argc, char **argv, void *args, FILE *msg); /* struct shared_window */
int doctor_main(void *args);
void doctor_help(FILE *f);

/* ---- doctor_cg.c: the sock_ops programs on the listeners' processes' cgroups ---- */
void doc_cgroups_rec(struct rec *root, const struct shared_window *d);
void doc_cgroups_text(FILE *f, const struct shared_window *d);
/* What a socktune program on listener l's service's cgroup sets that the path rules read:
 * its --initcwnd (0: none) and --congestion (cong: "" none); -1 when none is read */
int doc_cgroup_sets(const struct shared_window *d, int l, int *initcwnd, char *cong, size_t n);

/* ---- doctor_out.c ---- */
void doctor_print_text(FILE *f, const struct shared_window *d, const struct doc_findings *fs);
void doctor_print_json(FILE *f, const struct shared_window *d, const struct doc_findings *fs);
/* A failure: the message ("doctor ...") on stderr, and under --json the error
 * document on stdout (record.h's rec_error_json); returns status */
int doctor_fail(const struct shared_window *d, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Connections of listener l (-1: all), worst first: indexes into d->c, at most max. */
size_t doctor_worst(const struct shared_window *d, int l, size_t *idx, size_t max);

#endif
