/* The bpf(2) calls and the cgroup v2 lookups that the cgroup mode, check and doctor share:
 *   bpfcall.c  attach (BPF_PROG_ATTACH), detach, query, maps, a program's id and name
 *   owned.c    (owned.h) what socktune attached, on record: ours is known by it
 *   bpfread.c  whether the kernel loads a SOCK_OPS program here; what one of ours sets
 *   cgv2.c     the cgroup v2 mount, which cgroup a process is in */
#ifndef SOCKTUNE_BPFHOST_H
#define SOCKTUNE_BPFHOST_H

#include <stddef.h>

#include "socktune_opts.h"

#define CG_PROG_NAME "socktune" /* the name ours is loaded with (ours is known by record) */

/* ---- bpfcall.c ---- */

/* bpf(2) itself: cmd with attr (a head of union bpf_attr, bpf_abi.h). */
long cg_bpf(int cmd, void *attr, size_t size);

/* The sock_ops programs attached to cgroup_fd itself: ids into ids[max]; the count, or -1. */
int cg_query(int cgroup_fd, unsigned *ids, int max);
/* The name of program id ("" when it is gone): 0, or -1 with errno. */
int cg_prog_name(unsigned id, char *name, size_t n);
/* The id of the program prog_fd, or 0. */
unsigned cg_prog_id(int prog_fd);
/* Attach prog_fd to cgroup_fd at attach type (ST_BPF_CGROUP_SOCK_OPS,
 * ST_BPF_CGROUP_SETSOCKOPT) with BPF_PROG_ATTACH and BPF_F_ALLOW_MULTI (it stays until
 * detached, beside other programs attached with the flag); detach it: 0, or -1 with errno
 * (and err). */
int cg_attach_type(int prog_fd, int cgroup_fd, int type, char *err, size_t n);
int cg_detach_type(int prog_fd, int cgroup_fd, int type);
/* A map (BPF_MAP_CREATE; btf_fd >= 0: its key and value are the BTF's type 1, as
 * cg_btf_int's): its descriptor, or -1 with errno. */
int cg_map_create(int type, unsigned key_size, unsigned value_size, unsigned max_entries,
                  unsigned flags, int btf_fd, const char *name);
/* BPF_MAP_LOOKUP_ELEM: 0, or -1 with errno. */
int cg_map_lookup(int map_fd, const void *key, void *value);
/* The smallest BTF that a BPF_MAP_TYPE_SK_STORAGE map needs: type 1, INT "int" (4 bytes).
 * Its descriptor, or -1 with errno. */
int cg_btf_int(void);

/* ---- bpfread.c ---- */

/* Whether this kernel loads a SOCK_OPS program for this caller: a two-instruction one
 * (return 1) loaded and closed at once, attached nowhere.  0, or -1 with errno and err (the
 * cause: no bpf(2), no privilege, no sock_ops). */
int cg_sockops_loadable(char *err, size_t n);

/* What a program attached to a cgroup is: its id and name; for ours (CG_PROG_NAME) what it
 * sets, read off the instructions the kernel holds (BPF_OBJ_GET_INFO_BY_FD's translated
 * ones, which only a caller with CAP_BPF or CAP_SYS_ADMIN is given): bpf.c writes each option
 * as one bpf_setsockopt(ctx, level, optname, &value) and each reply as one store of a
 * constant into reply after a compare of the callback, and those instructions stay as written
 * through the verifier.  Its scope (ports, peers) is not decoded. */
struct cg_seen {
	unsigned id;
	char name[17];
	int ours;                      /* on socktune's record (owned.h), not by its name */
	char owner[64];                /* ours: who attached it ("socktune --cgroup 123") */
	int readable;                  /* ours, and its instructions were given */
	char why[160];                 /* not readable: why */
	int insns;                     /* the translated instructions' count (0: not given) */
	int set[ST_O_COUNT];           /* option i: set by the program */
	long long value[ST_O_COUNT];   /* its value (a duration in us; SYN RTO: from jiffies) */
	char text[ST_O_COUNT][17];     /* a name's value (TCP_CONGESTION) */
	long long syn_rto_jiffies;     /* (the value itself: in jiffies) */
};
/* Program id into s: 0, or -1 with errno (gone, or no privilege to see it at all).  hz: the
 * kernel's, for the SYN RTO (0: unknown, then only its jiffies). */
int cg_prog_look(unsigned id, long long hz, struct cg_seen *s);

/* ---- cgv2.c ---- */

/* The mount point of cgroup v2 from /proc/self/mountinfo: 0, or -1 with err. */
int cg_v2_mount(char *out, size_t n, char *err, size_t en);
/* The v2 cgroup process pid is in (0: the caller), as a directory: the mount + the 0:: line
 * of /proc/PID/cgroup.  0, or -1 with err. */
int cg_pid_dir(int pid, char *out, size_t n, char *err, size_t en);
/* Whether path is a directory of a cgroup v2 hierarchy. */
int cg_is_v2(const char *path);
/* Whether path is the root cgroup of its cgroup v2 hierarchy, the whole host, whatever the
 * mount point or mount namespace that shows it: decided by identity, never by comparing
 * names with a mount point (kernfs numbers a hierarchy's root directory inode 1, and only
 * the root has no cgroup.events). */
int cg_is_root(const char *path);

#endif
