/* The pidfds an attach run keeps, one per process it takes copies from (attach.c's tuning,
 * attachreset.c's look at new connections): opened once, found again by pid, dropped. */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/attach.h"
#include "host/grow.h"

int attach_pidfd(struct attach_state *t, int pid)
{
	for (size_t k = 0; k < t->npidfds; k++)
		if (t->pidfds[k].pid == pid)
			return t->pidfds[k].pidfd;
	if (grow(&t->pidfds, &t->cappidfds, t->npidfds, sizeof *t->pidfds, 64) != 0) {
		errno = ENOMEM;
		return -1;
	}
	int pfd = svc_high_fd((int)syscall(SYS_pidfd_open, pid, 0));
	if (pfd >= 0)
		t->pidfds[t->npidfds++] = (struct attach_pidfd){pid, pfd};
	return pfd;
}

void attach_pidfd_drop(struct attach_state *t, int pid)
{
	for (size_t k = 0; k < t->npidfds; k++)
		if (t->pidfds[k].pid == pid) {
			close(t->pidfds[k].pidfd);
			t->pidfds[k] = t->pidfds[--t->npidfds];
			return;
		}
}
