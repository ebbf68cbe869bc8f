/* The BPF iterator path as the subcommands use it (itertune.c): sockets named by their
 * sock_diag cookie, each with options of the table (ST_O_*, their iterator column) and their
 * values, set or only read in one network namespace by one bpfiter.c call, and what the
 * kernel did said as the apply step says it (struct st_outcome), read back from the same
 * pass or, for the cwnd clamp, from sock_diag's tcp_info.  And where a process's sockets are
 * without ptrace access to it (pidtie.c): its cgroup, its network namespace.  Internal to
 * cli/. */
#ifndef SOCKTUNE_ITERTUNE_H
#define SOCKTUNE_ITERTUNE_H

#include <stddef.h>

#include "socktune_apply.h"
#include "host/bpfiter.h"

#define IT_OPTS 24 /* options on one socket (the table's iterator ones, fewer still) */

struct it_sock {
	unsigned long long cookie;
	int family;
	int n;
	int opt[IT_OPTS];  /* ST_O_* with an iterator column (st_iter_how) */
	int want[IT_OPTS]; /* IT_SET: the value set */
	/* out, per option: ST_SET (got read back, ST_UNREAD when not readable), ST_FAILED (err:
	 * the kernel's errno), IT_READ: ST_FOUND (got; ST_UNREAD with err when not read);
	 * ST_UNTOUCHED when the socket was not visited */
	struct st_outcome out[IT_OPTS];
	int visited; /* out: the iterator met it */
};

/* Option opt of value want added to s: 0, or -1 when s holds IT_OPTS already */
int it_add(struct it_sock *s, int opt, int want);

enum { IT_SET, IT_READ };
/* One iterator call over the namespace of netns_fd (-1: ours) for s[n]: each option set
 * and read back (IT_SET), or read (IT_READ).  0, or -1 with err (one sentence) when it could
 * not run; run (may be NULL) says what it held and saw.  Nothing stays loaded. */
int it_run(int netns_fd, struct it_sock *s, int n, int mode, struct bi_run *run, char *err,
           size_t en);

/* Whether the path can be taken by this process here (bi_probe, once per run): 1, or 0 with
 * why (one sentence) */
int it_usable(char *why, size_t n);

/* ---- pidtie.c: a process's sockets without ptrace access to it ---- */

/* Whether pid's /proc/PID/fd links can be read (ptrace read access): 0; -errno (EACCES:
 * refused; ESRCH: no such process) */
int pid_fds_readable(int pid);

/* What ties a socket to process pid when its descriptors cannot be read: the cgroup v2 it
 * is in, when that cgroup holds only pid and its descendants (sock_diag gives each socket
 * the cgroup it was made in, INET_DIAG_CGROUP_ID, and its owner's uid); the uids of those
 * processes (each one's fsuid, which a socket it makes is given) */
#define PID_TIE_UIDS 16
struct pid_tie {
	int pid;
	unsigned long long cgroup_id; /* the directory's inode */
	char cgroup[1024];            /* the directory */
	unsigned uid[PID_TIE_UIDS];
	int nuid;
	int procs;                    /* processes in it */
};
/* 0, or -1 with why (no cgroup v2, the root cgroup, a cgroup another process shares) */
int pid_tie(int pid, struct pid_tie *t, char *why, size_t n);
/* Whether a socket of uid is one t's processes could have made */
static inline int pid_tie_uid(const struct pid_tie *t, unsigned uid)
{
	for (int k = 0; k < t->nuid; k++)
		if (t->uid[k] == uid)
			return 1;
	return 0;
}

/* pid's network namespace: its /proc/PID/ns/net when that may be opened, else the one of
 * ours and of /run/netns's files whose sockets /proc/PID/net/tcp lists (readable without
 * ptrace).  0 with *fd a descriptor (-1: this process's own) and name (a path, or "this
 * process's"); -1 with why. */
int pid_netns(int pid, int *fd, char *name, size_t nn, char *why, size_t wn);
/* The network namespace of inode ino: ours (*fd -1), a /run/netns file's, or a process's
 * /proc/PID/ns/net this process may open; 0, or -1 with why. */
int netns_by_ino(unsigned long long ino, int *fd, char *name, size_t nn, char *why, size_t wn);

#endif
