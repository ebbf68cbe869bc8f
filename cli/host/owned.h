/* What socktune put in the kernel, on record: each set of programs it attaches to a cgroup
 * (socktune --cgroup, attach --cgroup) is written down before it is attached, with the
 * kernel's id, tag and load time of each program, the cgroup (its path and id), who attached
 * it (pid and start time) and whether socktune made the cgroup.  A program is ours when a
 * record names its id with the same tag and load time: never by its name, which anyone can
 * give.  A later run cleans what a dead wrapper left (own_sweep).
 *
 * The records live in $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=), else /run/socktune
 * (root), else $XDG_RUNTIME_DIR/socktune: a directory of this user's, 0700, one file each. */
#ifndef SOCKTUNE_OWNED_H
#define SOCKTUNE_OWNED_H

#include <stdio.h>

#define OWN_MAX_PROGS 4
/* the cgroup hooks socktune attaches to (BPF_CGROUP_SOCK_OPS, BPF_CGROUP_SETSOCKOPT) */
enum { OWN_AT_SOCK_OPS = 3, OWN_AT_SETSOCKOPT = 22 };
#define OWN_MAX_ATTACHED 64 /* the kernel's limit of programs on one cgroup's hook */

struct own_prog {
	unsigned id;
	char tag[17];                 /* the kernel's tag of its instructions, in hex */
	unsigned long long load_time; /* ns since boot, as the kernel gives it */
	int attach_type;              /* BPF_CGROUP_SOCK_OPS, BPF_CGROUP_SETSOCKOPT */
};

struct own_rec {
	char file[4200];              /* its file (the directory's path and its name) */
	char kind[8];                 /* "run": socktune --cgroup; "attach": attach --cgroup */
	int pid;                      /* who attached them */
	unsigned long long start;     /* its start time (/proc/PID/stat), against pid reuse */
	unsigned long long cgroup_id; /* the cgroup's inode */
	int made;                     /* socktune made the cgroup: it removes it (2: about to make
	                               * it; a record written before the mkdir) */
	int nprogs;
	struct own_prog prog[OWN_MAX_PROGS];
	char held[400];               /* the options its setsockopt hook holds, in its map's order */
	char cgroup[4096];
};

/* The records' directory, made when absent: 0, or -1 with err. */
int own_dir(char *out, size_t n, char *err, size_t en);
/* Program id as the kernel has it now (tag, load time): 0, or -1 when it is gone. */
int own_prog_now(unsigned id, struct own_prog *p);
/* The start time of process pid (0: the caller), 0 when it is gone. */
unsigned long long own_start_of(int pid);
/* Whether r's owner is still the process that wrote it. */
int own_alive(const struct own_rec *r);
/* r written (r->file chosen when empty): 0, or -1 with err. */
int own_write(struct own_rec *r, char *err, size_t en);
void own_remove(const struct own_rec *r);
/* The records' lock (flock on DIR/.lock), held while a decision is made on what they say
 * (the sweep; a wrapper's end; attach and detach): its descriptor, or -1 when it could not
 * be had in 2 s (then without it).  own_unlock(-1) does nothing. */
int own_lock(void);
void own_unlock(int fd);
/* Every record (the directory's, and the default one's when RUNTIME_DIRECTORY names
 * another): the count, *out malloc'd (NULL when none). */
int own_read_all(struct own_rec **out);
/* The record that names program id as it is loaded now, in recs[n]; NULL: not ours. */
const struct own_rec *own_find(unsigned id, const struct own_rec *recs, int n);
/* Whether the cgroup dir holds a process (cgroup.events: populated), below it too. */
int own_populated(const char *dir);
/* Remove dir and the empty cgroups below it, deepest first: 0, or -1 with errno. */
int own_rmtree(const char *dir);
/* What dead owners left: their programs detached and the cgroups they made removed where no
 * process is left, each said on say as "socktune: WHO: ..."; where processes still run, said
 * (their connections stay tuned) and kept.  Stale records (every program gone) removed. */
void own_sweep(FILE *say, const char *who);

/* The programs attached to cgroup_fd at attach_type: ids into ids[max]; the count, or -1. */
int own_query(int cgroup_fd, int attach_type, unsigned *ids, int max);
/* prog_fd attached to cgroup_fd (BPF_F_ALLOW_MULTI); with replace_id not 0, in its place: that
 * one detached first, then this one attached (for the kernel's limit; a connection made in
 * between is not tuned), put back if this one is refused.  0, or -1 with errno. */
int own_attach(int prog_fd, int attach_type, int cgroup_fd, unsigned replace_id);
/* Program id detached from cgroup_fd: 0, or -1 with errno. */
int own_detach(unsigned id, int attach_type, int cgroup_fd);
/* r filled for this process (kind, the cgroup, whether made, the programs fds[n] with their
 * hooks; a descriptor -1 is left out): 0, or -1 with errno. */
int own_rec_fill(struct own_rec *r, const char *kind, const char *cgroup, unsigned long long cgroup_id,
                 int made, const int *fds, const int *types, int n);

#endif
