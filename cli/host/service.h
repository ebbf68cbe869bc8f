/* A service seen from outside: the processes that make it and their TCP sockets, found with
 * no descriptor of theirs copied (a copy keeps a socket alive after its owner's close()).
 * What a target of `socktune attach` names:
 *   PID     the listeners PID holds; every process that holds one of them (prefork workers);
 *           every process that holds a connection accepted on one of them (the same local
 *           address and port: PostgreSQL's backends hold connections, not the listener); and
 *           PID's own connections.  Outgoing connections are those of these processes whose
 *           local port is no listener's.
 *   :PORT   the listeners on that port (in our network namespace), and the same from there.
 *   FAMILY  (the wrapper's attach mode) the listeners held by PID's descendants.
 * Sockets are classified by sock_diag (diag.c) in the service's network namespace, or from
 * /proc/PID/net/tcp and tcp6 where that namespace cannot be joined (setns needs
 * CAP_SYS_ADMIN: a rootless container's); who holds which from /proc/PID/fd (holders.c).
 * A service remembers what it has settled, so a later look costs one sock_diag dump of the
 * listeners when nothing is new: descriptors are read only when a socket of interest is. */
#ifndef SOCKTUNE_SERVICE_H
#define SOCKTUNE_SERVICE_H

#include <stddef.h>

#include "host/diag.h"

/* A map of nonzero 64-bit keys to small values, open addressing, grown as it fills. */
struct svc_map {
	unsigned long long *keys;
	unsigned char *vals;
	size_t cap, n;
};
int svc_map_get(const struct svc_map *m, unsigned long long key); /* -1: absent */
int svc_map_put(struct svc_map *m, unsigned long long key, int val); /* 0, -1: no memory */
void svc_map_free(struct svc_map *m);

/* A growing list of pids */
struct svc_pids {
	int *v;
	size_t n, cap;
};
int svc_pids_add(struct svc_pids *p, int pid); /* 1 added, 0 there already, -1 no memory */
int svc_pids_has(const struct svc_pids *p, int pid);
/* p's pids as a line's words ("12 13 14"), " ..." at the end when out[n] holds not all. */
void svc_pids_text(const struct svc_pids *p, char *out, size_t n);

/* pid's children (from /proc/PID/task/TID/children), and all its descendants (theirs too,
 * pid itself with with_self; nothing when pid is in out already), added to out.  No cap. */
void svc_children(int pid, struct svc_pids *out);
void svc_descendants(int pid, int with_self, struct svc_pids *out);

enum svc_scope { SVC_PID, SVC_PORT, SVC_FAMILY };
enum svc_kind { SVC_LISTENER, SVC_ACCEPTED, SVC_OUTGOING };

struct svc_sock {
	unsigned long long ino;
	unsigned long long cookie; /* sock_diag's idiag_cookie (0: /proc/PID/net read) */
	int kind;    /* enum svc_kind */
	int family;
	unsigned state, sport, dport;
	unsigned rqueue, wqueue; /* a listener: its accept queue now, the backlog in force */
	unsigned uid;            /* its owner's, as sock_diag says */
	unsigned long long cgroup_id; /* the cgroup v2 it was made in (0: not said) */
	unsigned char src[16], dst[16];
	int listener; /* SVC_ACCEPTED: the index of its listener in svc->s, -1 not the service's */
};

/* What to look at: listeners always; SVC_W_ACCEPTED the connections accepted on the
 * service's listeners (and PID's own); SVC_W_OUTGOING its outgoing connections;
 * SVC_W_UNHELD the service's sockets that no process this user may read holds, passed with
 * no holder (a :PORT's listeners, the connections accepted on the service's listeners, a
 * tied PID's sockets): for a path that needs no descriptor (the BPF iterator). */
enum { SVC_W_ACCEPTED = 1, SVC_W_OUTGOING = 2, SVC_W_EVERY = 4, SVC_W_UNHELD = 8 };
/* (SVC_W_EVERY: connections at every look.  Without it, after the first look they are
 * looked at again only while some of the service's were not held by a process yet: one
 * accepted later carries its listener's options, which the kernel copies.) */

/* For each socket of the service not settled yet: its holders (h[0..nh), at least one; none,
 * h NULL, only under SVC_W_UNHELD).
 * Returns SVC_DONE (settled: never passed again) or SVC_AGAIN (passed again next look). */
enum { SVC_DONE, SVC_AGAIN };
typedef int (*svc_cb)(const struct svc_sock *s, const struct holder *h, size_t nh, void *ctx);

struct service {
	enum svc_scope scope;
	int pid;        /* SVC_PID, SVC_FAMILY */
	unsigned port;  /* SVC_PORT */
	int netpid;     /* whose network namespace is looked at: pid's, or (SVC_FAMILY) that of
	                 * a process of the family in another one */
	int nl;         /* sock_diag in that namespace; -1: /proc/NETPID/net/tcp{,6} read */
	char how[160];  /* "" or why /proc/PID/net is read instead */
	long looks;
	int conns_due;  /* connections must be looked at again: some were not held yet */
	struct svc_map seen;  /* inode -> SEEN_* bits */
	struct svc_pids pids; /* the processes found to make it (SVC_PID: pid first) */
	/* the last look's */
	struct svc_sock *s;
	size_t n, cap;
	struct holders hs;
	int scanned_all;      /* its holders are every process's */
	int moved;            /* the family changed while its descriptors were read */
	size_t listeners;     /* the service's listeners in it */
	size_t unheld;        /* of those, the ones no process read holds (another user's) */
	size_t queued;        /* connections in accept queues (of any listener), held by none */
	/* SVC_PID whose descriptors cannot be read (svc_open_tied): its sockets are those made
	 * in its cgroup by its uids (pidtie.c); and the namespace looked at, by a descriptor
	 * (-1: by netpid, or ours), closed with the service */
	const struct pid_tie *tie;
	int netns_fd;
	char netns_name[128]; /* that namespace, as it was opened */
};

/* fd moved above 0-2 (with those closed, a socket there would take our messages) */
int svc_high_fd(int fd);

/* Open: 0, or -errno with why in err (no such process, its namespace unreadable). */
int svc_open(struct service *svc, enum svc_scope scope, int pid, unsigned port, char *err,
             size_t n);
/* The same, looking at the network namespace netpid is in (pid's own for svc_open). */
int svc_open_in(struct service *svc, enum svc_scope scope, int pid, int netpid, unsigned port,
                char *err, size_t n);
/* SVC_PID for a process whose /proc/PID/fd cannot be read: its sockets are tie's (made in
 * its cgroup by one of its uids), looked for in the namespace of netns_fd (-1: ours), which
 * the service takes.  0, or -errno with why in err. */
struct pid_tie;
int svc_open_tied(struct service *svc, int pid, const struct pid_tie *tie, int netns_fd,
                  const char *netns_name, char *err, size_t n);
/* One look: cb for each socket of interest not settled.  0, or -errno (the dump failed). */
int svc_look(struct service *svc, unsigned want, svc_cb cb, void *ctx);
void svc_close(struct service *svc);

/* The processes of pid's service now, pid first: the holders of its listeners and of the
 * connections accepted on them, added to out (one look, nothing changed; for doctor's fixes
 * that name each pid).  0, or -errno. */
int svc_members(int pid, struct svc_pids *out);

#endif
