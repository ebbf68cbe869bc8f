/* Apply the policy to one socket, read back what the kernel made of it: the step the
 * library's hooks run on the sockets of the process they live in, and that a command can
 * run on any descriptor it holds.  It logs nothing: the caller explains the outcomes
 * (include/socktune_kernel.h has the why and the fix). */
#ifndef SOCKTUNE_APPLY_H
#define SOCKTUNE_APPLY_H

#include <limits.h>
#include <stdint.h>
#include <sys/socket.h>

#include "socktune_opts.h"

/* How the socket is reached: inside the library its real libc functions, in the command
 * raw system calls. */
struct st_sockops {
	int (*set)(int fd, int level, int optname, const void *val, socklen_t len);
	int (*get)(int fd, int level, int optname, void *val, socklen_t *len);
};

#define ST_UNREAD INT_MIN /* no value read back */

enum st_state {
	ST_UNTOUCHED, /* not set by the policy, or not for this socket */
	ST_SET,       /* set; got is what reading it back said (ST_UNREAD: unreadable) */
	ST_READ,      /* dry run: only read; got is what the socket carries */
	ST_KEPT,      /* the app set it itself and keeps it (precedence=app) */
	ST_FAILED,    /* the kernel refused: err */
};

struct st_outcome { /* (small: the library keeps one per option on the app's stack) */
	unsigned char state;
	short err;       /* ST_FAILED: the errno of setsockopt */
	short force_err; /* SO_RCVBUFFORCE was refused with this errno, SO_RCVBUF used instead */
	int want;        /* the policy's value (a name option: 1) */
	int got;         /* read back (a name option: 1 when it is the policy's name) */
};

#define ST_NAME_MAX 16 /* TCP_CA_NAME_MAX */
struct st_applied {
	struct st_outcome o[ST_O_COUNT];
	char name[ST_NAME_MAX]; /* the name option's value, read back */
};

struct st_apply_req {
	const struct st_policy *p;
	int family;
	unsigned need, skip; /* flags an option must have (0: any) and must not have */
	uint64_t keep;       /* options (bit 1 << i) the app set itself and keeps: left alone */
	uint64_t off;        /* options not even tried (refused once already) */
	int dry;             /* read only, set nothing */
};

/* Apply every option of rq->p that suits the request to fd; out says what became of each.
 * Returns the number refused. */
int st_apply(const struct st_sockops *ops, int fd, const struct st_apply_req *rq,
             struct st_applied *out);

/* The same for option i alone (name: ST_NAME_MAX bytes for a name option's read-back).
 * Returns 0 when the request leaves the option alone (o->state ST_UNTOUCHED). */
int st_apply_one(const struct st_sockops *ops, int fd, const struct st_apply_req *rq, int i,
                 struct st_outcome *o, char *name);

/* What fd carries now for each option p sets (ST_UNREAD where unreadable or not set;
 * a name option: 1 when it is p's name), those set before bind() or only on outgoing
 * connections excepted. */
void st_read_current(const struct st_sockops *ops, int fd, int family,
                     const struct st_policy *p, int *cur);
/* Whether cur (st_read_current) is what applying p would leave there. */
int st_is_applied(const struct st_policy *p, const int *cur);

/* The keys of a log line for what became of option i (" nodelay=1", " rcvbuf.want=N
 * rcvbuf.effective=M"; in a dry run effective is what would be, st_dry_buffer, and
 * rcvbuf.now=K what is there), " delack_max_us.want=5000 delack_max_us.effective=8000"; ""
 * for none, and for ST_KEPT: the app's own value kept), in the library's format: its hooks
 * and the command's attach print the same. */
int st_outcome_keys(const struct st_policy *p, int i, const struct st_outcome *o,
                    const char *name, char *buf, size_t n);

/* In a dry run, what the kernel would make of a request, predicted from its limit (the same
 * number the clamp warning says): a buffer min(want, limit) doubled (not capped when
 * SO_RCVBUFFORCE is asked for and CAP_NET_ADMIN held), a backlog min(want, somaxconn);
 * somaxconn < 0: unknown (want). */
long long st_dry_buffer(const struct st_policy *p, int i, long long want);
static inline long long st_dry_backlog(long long want, long long somaxconn)
{
	return somaxconn >= 0 && want > somaxconn ? somaxconn : want;
}

/* The backlog p wants for the app's (listen(fd, -1) asks for net.core.somaxconn), and
 * whether p sets one at all. */
int st_backlog_want(const struct st_policy *p, int app);
int st_backlog_governed(const struct st_policy *p);

/* The backlog in force on a listening socket (TCP_INFO's tcpi_sacked there is
 * sk_max_ack_backlog, after the cut to net.core.somaxconn), and the connections waiting in
 * its accept queue (tcpi_unacked).  -1 when fd answers no TCP_INFO. */
int st_listen_backlog(const struct st_sockops *ops, int fd);
int st_accept_queue(const struct st_sockops *ops, int fd);

#endif
