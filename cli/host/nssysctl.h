/* A sysctl as another process's network namespace has it (nssysctl.c): what caps the
 * options set on that process's sockets (attach's clamps, doctor's limits per namespace,
 * watch's findings).  Internal to cli/. */
#ifndef SOCKTUNE_NSSYSCTL_H
#define SOCKTUNE_NSSYSCTL_H

/* A sysctl of pid's network namespace (read by a child that joins it when it is not ours),
 * -1 when it cannot be read. */
long long target_sysctl(int pid, const char *name);
/* The same for a sysctl whose value is a word (net.ipv4.tcp_congestion_control): 0, or -1
 * (out "") */
int target_sysctl_str(int pid, const char *name, char *out, size_t n);

#endif
