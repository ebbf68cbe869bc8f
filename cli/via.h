/* --via pidfd|bpf|auto: how attach, watch --apply and revert reach a socket of another
 * process (via.c).  pidfd: a copy of its descriptor (pidfd_getfd: ptrace access, the same uid
 * and a dumpable target or CAP_SYS_PTRACE); bpf: a TCP iterator program made for the call
 * that sets the options on the socket by its sock_diag cookie, with no descriptor (Linux
 * 6.4, BTF, CAP_BPF with CAP_PERFMON or CAP_SYS_ADMIN; CAP_SYS_ADMIN to enter another
 * network namespace); auto: pidfd where the copy is given, else the iterator where it can be
 * used.  What one path cannot do is refused for that item, the other path named.  Internal
 * to cli/. */
#ifndef SOCKTUNE_VIA_H
#define SOCKTUNE_VIA_H

#include <stdio.h>

#include "host/bpfiter.h"

enum via { VIA_AUTO, VIA_PIDFD, VIA_BPF };

/* "pidfd", "bpf", "auto" into *v: 0, or -1 */
int via_parse(const char *word, enum via *v);
const char *via_name(int via);

/* What each path needs, as the refusals say it */
#define VIA_PIDFD_NEEDS "pidfd_getfd needs ptrace access: the same uid and a dumpable target, " \
	"or CAP_SYS_PTRACE (--via pidfd)"
#define VIA_BPF_NEEDS "the TCP iterator needs Linux 6.4 with BTF, CAP_BPF with CAP_PERFMON or " \
	"CAP_SYS_ADMIN, and CAP_SYS_ADMIN for another network namespace (--via bpf)"

/* The line one iterator run leaves on f: "socktune pid=N level=info event=iterator" with
 * command's name, the namespace (as opened), the program's, map's and link's ids (gone when
 * it returned), its instructions, the sockets asked for, met and not met, how long; rc -1:
 * level=warn with err */
void via_say_run(FILE *f, const char *command, const char *netns, const struct bi_run *r,
                 int asked, double ms, int rc, const char *err);

#endif
