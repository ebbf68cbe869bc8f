/* This host's limits (common/host.c), shared by the library and the command: /proc/sys read
 * with raw system calls, so that no hook of the library is re-entered while it reads. */
#ifndef SOCKTUNE_HOST_H
#define SOCKTUNE_HOST_H

#include <stddef.h>

long long st_sysctl_num(const char *name, long long dflt); /* "net.core.rmem_max" */
int st_sysctl_str(const char *name, char *buf, size_t n);
/* 1: port is one the kernel hands out for port 0 (net.ipv4.ip_local_port_range, not in
 * ip_local_reserved_ports); 0: not, or the sysctls do not say */
int st_port_ephemeral(unsigned port);
/* A TcpExt counter of the calling thread's network namespace (/proc/thread-self/net/netstat,
 * else /proc/net/netstat), or -1. */
long long st_netstat(const char *name);
/* Counter NAME of the PREFIX lines ("TcpExt:", "Tcp:") of a netstat or snmp file at PATH:
 * -1 when not there, -2 when the file cannot be opened. */
long long st_proc_counter(const char *path, const char *prefix, const char *name);
/* 1 when congestion control NAME is a loadable module of the running kernel (tcp_NAME.ko,
 * compressed or not, under /lib/modules/RELEASE/kernel/net/ipv4), else 0. */
int st_congestion_module(const char *name);

/* Whether the calling thread holds capability cap (CAP_NET_ADMIN: 12) in its effective set:
 * 1, 0, or -1 when the kernel does not say (capget). */
#define ST_CAP_NET_ADMIN 12 /* linux/capability.h */
int st_cap_effective(int cap);

#endif
