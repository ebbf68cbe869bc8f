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
	ST_FOUND,     /* only read, nothing set or asked: got is what the socket carries (a
	               * listener a parent tuned before it exec'd us; what bind() set) */
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

/* ---- what became of an option, said: one walk, every writer ----
 *
 * The library's log line, the command's records (attach, the JSON documents) and the listen
 * line's backlog all say an outcome through the walks below, which hand its values one at
 * a time to an emitter: what an outcome is called, and which values it has, is decided
 * here only.  The keys are the log's (st_opt_key); socktune --schema lists them. */

/* How option i is said: an integer (mark=4294967295: an unsigned option by its bits), a
 * flag (nodelay=1, true), a name (congestion=reno), or a group of stages (rcvbuf.want,
 * rcvbuf.effective; a duration's key carries its unit: delack_max_us.want). */
enum st_shape { ST_SHAPE_INT, ST_SHAPE_FLAG, ST_SHAPE_NAME, ST_SHAPE_GROUP };
enum st_shape st_opt_shape(int i);
/* Option i's key in every output: its log key, a duration's with the unit ("delack_max_us") */
const char *st_outcome_key(int i, char *buf, size_t n);

/* A group's stages: what the program asked for, what was in force before, what the policy
 * wants, what is in force (in a dry run: what would be), what is in force now (a dry run) */
enum st_stage { ST_STAGE_NONE, ST_STAGE_APP, ST_STAGE_BEFORE, ST_STAGE_WANT, ST_STAGE_EFFECTIVE,
                ST_STAGE_NOW, ST_STAGE_COUNT };
extern const char *const st_stage_names[ST_STAGE_COUNT]; /* "", "app", ..., "now" */

/* One value of an outcome as the walk hands it on */
struct st_field {
	int opt;             /* the option, or ST_FIELD_BACKLOG */
	const char *key;     /* "nodelay", "rcvbuf", "delack_max_us", "backlog" */
	enum st_stage stage; /* ST_STAGE_NONE: the key's own value; else "key.stage" */
	enum st_shape shape; /* the value's: ST_SHAPE_INT (num), FLAG (num 0 or 1), NAME (name) */
	int unknown;         /* no value known: null in JSON, left out of a log line */
	long long num;
	const char *name;
};
#define ST_FIELD_BACKLOG (-1)

struct st_emitter {
	void (*field)(void *ctx, const struct st_field *f);
	void *ctx;
};

/* What became of option i (st_apply_one's o; name: a name option's read-back), said to e:
 * nothing for ST_UNTOUCHED, ST_KEPT (the app's own value kept: the library lists it in
 * app_kept), ST_FAILED (a refusal is a warning of its own) or a value not read back; a group
 * says want and effective (a dry run's effective is what would be: a buffer's, st_dry_buffer,
 * with now, what is there; ST_FOUND: effective alone). */
void st_outcome_walk(const struct st_policy *p, int i, const struct st_outcome *o,
                     const char *name, const struct st_emitter *e);

/* A listener's backlog, each stage a number, ST_STAGE_UNSAID (left out) or
 * ST_STAGE_UNKNOWN (said as unknown) */
struct st_backlog_said {
	long long app, before, want, effective, now;
};
#define ST_STAGE_UNSAID LLONG_MIN
#define ST_STAGE_UNKNOWN (LLONG_MIN + 1)
void st_backlog_walk(const struct st_backlog_said *b, const struct st_emitter *e);

/* The library's writer: the same as logfmt keys (" nodelay=1 rcvbuf.want=N
 * rcvbuf.effective=M"), appended to buf (n bytes, '\0'-terminated, cut when full); returns
 * the bytes written.  No allocation, snprintf only: it runs inside the app's calls. */
size_t st_outcome_keys(const struct st_policy *p, int i, const struct st_outcome *o,
                       const char *name, char *buf, size_t n);
size_t st_backlog_keys(const struct st_backlog_said *b, char *buf, size_t n);

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
