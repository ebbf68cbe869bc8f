/* What a service is (cli/host/service.c), on processes made here: a master holding a listener,
 * a worker it forked holding a connection accepted on it (the master's copy closed, the
 * worker's copy of the listener closed: a PostgreSQL backend): svc_members(master) names
 * both and not the client; :PORT finds that one listener; the inode map keeps 5,000 keys. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "host/service.c"
#include "host/svcsets.c"
#include "host/diag.c"
#include "host/holders.c"
#include "host/grow.c"
#include "host/pidinfo.c"
#include "unit.h"

static void map_cases(void)
{
	struct svc_map m = {0};
	for (unsigned long long k = 1; k <= 5000; k++)
		if (svc_map_put(&m, k * 7919, (int)(k % 200)) != 0)
			CASE_FAIL("put %llu", k);
	for (unsigned long long k = 1; k <= 5000; k++)
		if (svc_map_get(&m, k * 7919) != (int)(k % 200))
			CASE_FAIL("get %llu: %d", k, svc_map_get(&m, k * 7919));
	if (svc_map_get(&m, 13) != -1 || m.n != 5000)
		CASE_FAIL("absent key: %d, n %zu", svc_map_get(&m, 13), m.n);
	svc_map_free(&m);
	end_group("service.map");
}

/* The master: a listener, its port and then the worker's pid on fd out; the worker gets the
 * connection and keeps it; both wait to be killed. */
static void master(int out)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 5) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		_exit(1);
	int port = ntohs(a.sin_port);
	if (write(out, &port, sizeof port) != sizeof port)
		_exit(1);
	int c = accept(l, NULL, NULL);
	pid_t w = fork();
	if (w == 0) {
		close(l);
		pause();
		_exit(0);
	}
	close(c);
	if (write(out, &w, sizeof w) != sizeof w)
		_exit(1);
	pause();
	_exit(0);
}

static void service_cases(void)
{
	int p[2], port = 0;
	pid_t worker = 0;
	if (pipe(p) != 0)
		return;
	pid_t m = fork();
	if (m == 0) {
		close(p[0]);
		master(p[1]);
	}
	close(p[1]);
	if (read(p[0], &port, sizeof port) != sizeof port)
		CASE_FAIL("no port from the master");
	int c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                        .sin_port = htons((unsigned short)port)};
	if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
		CASE_FAIL("connect to %d", port);
	if (read(p[0], &worker, sizeof worker) != sizeof worker)
		CASE_FAIL("no worker from the master");
	struct svc_pids got = {0};
	int r = svc_members(m, &got);
	if (r != 0 || !svc_pids_has(&got, m) || !svc_pids_has(&got, worker) ||
	    svc_pids_has(&got, getpid()) || got.v[0] != m)
		CASE_FAIL("svc_members(%d): %d, %zu pids, master %d worker %d (%d) us %d", m, r, got.n,
		          svc_pids_has(&got, m), svc_pids_has(&got, worker), worker,
		          svc_pids_has(&got, getpid()));
	struct svc_pids tree = {0};
	svc_descendants(m, 0, &tree);
	if (tree.n != 1 || tree.v[0] != worker)
		CASE_FAIL("descendants of %d: %zu, the first %d (want %d)", m, tree.n,
		          tree.n ? tree.v[0] : -1, worker);
	struct service svc;
	char err[200];
	if (svc_open(&svc, SVC_PORT, 0, (unsigned)port, err, sizeof err) != 0 ||
	    svc_look(&svc, SVC_W_ACCEPTED, settle, NULL) != 0 || svc.listeners != 1 ||
	    !svc_pids_has(&svc.pids, m) || !svc_pids_has(&svc.pids, worker))
		CASE_FAIL(":%d: %zu listeners, master %d, worker %d (%s)", port, svc.listeners,
		          svc_pids_has(&svc.pids, m), svc_pids_has(&svc.pids, worker), err);
	svc_close(&svc);
	kill(m, SIGKILL);
	if (worker > 0)
		kill(worker, SIGKILL);
	waitpid(m, NULL, 0);
	free(got.v);
	free(tree.v);
	close(c);
	end_group("service.members");
}

int main(void)
{
	map_cases();
	service_cases();
	return failures != 0;
}
