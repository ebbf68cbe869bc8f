/* What /proc says of a process that several parts of the command ask: the cgroup it is in
 * (/proc/PID/cgroup: watch's targets and labels, the cgroup mode, attach --cgroup, doctor)
 * and whether one of its namespaces is ours (/proc/PID/ns/KIND: attach, doctor, watch, the
 * namespace sysctls).  The process may be another user's, in other namespaces, gone by the
 * next read, or hostile: its cgroup path is made of whatever names its owner gave the
 * directories.  Internal to cli/. */
#ifndef SOCKTUNE_PIDINFO_H
#define SOCKTUNE_PIDINFO_H

#include <stddef.h>

/* The name of pid's cgroup file into buf (64 bytes are enough): /proc/PID/cgroup, or
 * /proc/self/cgroup for pid 0.  buf. */
const char *pid_cgroup_file(int pid, char *buf, size_t n);

/* pid's cgroup v2 path (pid 0: this process's), its "0::PATH" line: "/" for the root
 * cgroup, "/.." first for a cgroup outside this process's cgroup namespace.  Never longer
 * than PATH_MAX - 1 bytes (the kernel fails the read rather than write a longer one), so an
 * out of PATH_MAX always holds it.  0; -1 with errno when the file cannot be opened (no such
 * process, /proc not mounted); -2 when it has no such line (a v1-only host, a process that
 * ended while it was read) or the path does not fit in n. */
int pid_cgroup(int pid, char *out, size_t n);

/* The cgroup path that names pid's service on any layout: the v2 one unless it is the root
 * (a v1 or hybrid host may leave every process in "0::/"), else that of systemd's own v1
 * hierarchy ("1:name=systemd:PATH"), else the first hierarchy's; "" when none is read. */
void pid_cgroup_service(int pid, char *out, size_t n);

/* Whether pid's namespace of kind ns ("net", "uts", "mnt") is this process's, by the
 * identity (device and inode) of its namespace file: 1 it is; 0 it is another, or ours
 * cannot be read; -1 with errno when pid's cannot be (no such process; another user's,
 * which the kernel's ptrace check refuses). */
int pid_same_ns(int pid, const char *ns);

#endif
