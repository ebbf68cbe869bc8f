/* socktune watch's command line and --help.  The parser returns a status and never exits;
 * nothing is bound here (the address of --listen is bound by watch_main); an --apply-netns
 * file is opened only to ask the kernel what it is. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "via.h"
#include "watch/watch.h"

void watch_help(FILE *f)
{
	fprintf(f,
	        "usage: socktune watch (--listen ADDR:PORT | --textfile PATH) [OPTIONS] [PID...|:PORT...|CGROUP...]\n"
	        "\n"
	        "Watches every TCP listener of the node, in every network namespace (or those of\n"
	        "the processes, ports and cgroups given: a CGROUP is a cgroup v2 directory, as\n"
	        "/sys/fs/cgroup/system.slice/x.service or /system.slice/x.service, and its\n"
	        "listeners are those a process in it or below holds), from the kernel's socket\n"
	        "diagnostics, changing\n"
	        "nothing (unless --apply) and preloading nothing: per listener its accept queue now and its peak\n"
	        "since the last scrape, the backlog in force, the connection attempts it dropped,\n"
	        "its buffers; per namespace the TcpExt ListenOverflows and ListenDrops counters.\n"
	        "Series are named by namespace, address, port and the service that holds the\n"
	        "listener (comm, systemd unit, container, pod), never by pid, so a restart\n"
	        "continues them; a listener that is gone is said once (up 0), then dropped.\n"
	        "\n"
	        "Options:\n");
	help_entry(f, "--listen ADDR:PORT",
	           "serve GET /metrics (Prometheus text) there; PORT or :PORT alone is 127.0.0.1's, "
	           "[::1]:PORT an IPv6 address", NULL);
	help_entry(f, "--textfile PATH",
	           "write the same text to PATH for node_exporter's textfile collector (a .prom "
	           "file), replaced whole each time", NULL);
	help_entry(f, "--every SECONDS", "how often --textfile is written (0.1 to 3600; default 15)",
	           NULL);
	help_entry(f, "--interval SECONDS",
	           "how often the listeners are sampled (0.01 to 60; default 0.1)", NULL);
	help_entry(f, "--window SECONDS",
	           "the window doctor's accept-queue rules (and its Nagle rule, on the latest "
	           "connection samples) judge, each in turn (0.1 to 3600; "
	           "default 10): a finding is a series while it holds, and a line on stderr when it "
	           "appears and when it clears.  It holds while it recurs in any of the last 6 "
	           "windows: it clears after 6 quiet windows in a row (twice that at each flap, "
	           "up to 64)", NULL);
	help_entry(f, "--apply",
	           "apply the cure of a finding that a socket option cures, once per listener, "
	           "live through a pidfd_getfd copy: accept-queue-overflow listens again with "
	           "backlog 4096 (cut to the namespace's somaxconn), nagle-delayed-ack sets "
	           "TCP_NODELAY on the listener and its connections; each change read back, said "
	           "on stderr and written to the journal first; every socket of an SO_REUSEPORT "
	           "group, and a restarted server's new socket when the finding comes back.  "
	           "Someone setting the option otherwise afterwards makes watch back off from "
	           "that socket (said once); an application that sets TCP_NODELAY 0 on each "
	           "connection it accepts is said once, with the cures that hold.  Only in watch's "
	           "own network namespace and its targets' (a PID's, a CGROUP process's; a :PORT "
	           "is watch's own namespace's): a finding elsewhere is reported, and said not "
	           "applied.  Without --apply watch changes nothing", NULL);
	help_entry(f, "--apply-netns all|PATH",
	           "with --apply, the network namespace of PATH (/run/netns/NAME, "
	           "/proc/PID/ns/net) is in its scope too; all: every namespace of the node.  "
	           "Repeatable", NULL);
	help_entry(f, "--via pidfd|bpf|auto",
	           "with --apply, how a socket is changed: pidfd, through a pidfd_getfd copy (the "
	           "same uid and a dumpable target, or CAP_SYS_PTRACE); bpf, through a TCP "
	           "iterator program made for the change, run once and closed, by the socket's "
	           "sock_diag cookie (Linux 6.4 with BTF, CAP_BPF with CAP_PERFMON or "
	           "CAP_SYS_ADMIN; no ptrace, no holder needed); auto (default): pidfd where the "
	           "copy is given, else bpf.  The backlog cure needs pidfd: under bpf it is "
	           "refused for that socket, said once.  The journal says which path each change "
	           "took; revert takes the same", NULL);
	help_entry(f, "--journal PATH",
	           "with --apply, the journal of every change (one JSON line each, appended, "
	           "fsync'd; socktune revert undoes them); default $STATE_DIRECTORY/journal.jsonl, "
	           "else /var/lib/socktune/journal.jsonl.  A symlink, a FIFO or a file socktune did "
	           "not make is refused", NULL);
	help_entry(f, "--seconds N", "end after N seconds (default: run until SIGTERM or SIGINT)",
	           NULL);
	help_entry(f, "--help", "", NULL);
	fprintf(f, "\n"
	           "Exit status: 2 for a bad option; 3 when a target is not found or --listen's\n"
	           "address cannot be bound; 1 when --textfile cannot be written at the first try\n"
	           "or --apply's journal cannot be opened (refused);\n"
	           "0 at the end of --seconds; 143 on SIGTERM, 130 on SIGINT.  SIGHUP does not\n"
	           "end it: the namespaces and every listener's service are looked up again;\n"
	           "SIGUSR1 writes one line of its state (namespaces, listeners, findings, the\n"
	           "connection sample's age) on stderr, and with --apply a second (changes made,\n"
	           "NODELAY cures whose new connections are still read).\n");
}

/* The inode of the network namespace file path (/run/netns/NAME, /proc/PID/ns/net): 0, or
 * -1 with why in err */
static int netns_file(const char *path, unsigned long long *ino, char *err, size_t n)
{
	/* NS_GET_NSTYPE (linux/nsfs.h, Linux 4.11): what kind of namespace the file is */
	const unsigned long ns_get_nstype = 0xb703;
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) != 0) {
		snprintf(err, n, "%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int type = ioctl(fd, ns_get_nstype);
	close(fd);
	if (type != CLONE_NEWNET) {
		snprintf(err, n, "not a network namespace (a file such as /run/netns/NAME or "
		         "/proc/PID/ns/net)");
		return -1;
	}
	*ino = (unsigned long long)sb.st_ino;
	return 0;
}

/* A number of seconds in [lo, hi] */
static enum cli_status seconds_arg(const char *opt, const char *v, double lo, double hi,
                                   double *out, FILE *msg)
{
	char *end;
	double s = v ? strtod(v, &end) : 0;
	if (!v || end == v || *end || !(s >= lo && s <= hi))
		return usage_error(msg, "watch %s %s: a number of seconds, %g to %g", opt,
		                   v ? v : "(missing)", lo, hi);
	*out = s;
	return CLI_GO;
}

enum cli_status watch_parse(int argc, char **argv, void *args, FILE *msg)
{
	struct watch_args *a = args;
	memset(a, 0, sizeof *a);
	a->interval = 0.1;
	a->every = 15;
	a->window = 10;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v;
		struct target t;
		if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0)
			return CLI_HELP;
		if (opt_value(argc, argv, &i, "--listen", &v) ||
		    opt_value(argc, argv, &i, "--textfile", &v)) {
			const char *name = o[2] == 'l' ? "--listen" : "--textfile";
			if (!v || !*v)
				return usage_error(msg, "watch %s: %s", name, v ? "an empty value"
				                   : o[2] == 'l' ? "missing ADDR:PORT" : "missing PATH");
			struct sockaddr_storage ss;
			socklen_t len;
			if (o[2] == 'l' && watch_http_parse(v, &ss, &len) != 0)
				return usage_error(msg, "watch --listen %s: not an address and port (PORT, "
				                   ":PORT, ADDR:PORT, [ADDR6]:PORT; PORT 1 to 65535)", v);
			*(o[2] == 'l' ? &a->listen : &a->textfile) = v;
		} else if (strcmp(o, "--apply") == 0) {
			a->apply = 1;
		} else if (opt_value(argc, argv, &i, "--apply-netns", &v)) {
			char err[200];
			if (!v || !*v)
				return usage_error(msg, "watch --apply-netns: %s", v ? "an empty value"
				                   : "missing all or PATH (/run/netns/NAME, /proc/PID/ns/net)");
			if (strcmp(v, "all") == 0) {
				a->apply_netns_all = 1;
			} else if (a->napply_netns == WATCH_APPLY_NETNS) {
				return usage_error(msg, "watch --apply-netns: at most %d", WATCH_APPLY_NETNS);
			} else if (netns_file(v, &a->apply_netns[a->napply_netns], err, sizeof err) != 0) {
				return usage_error(msg, "watch --apply-netns %s: %s", v, err);
			} else {
				a->napply_netns++;
			}
		} else if (opt_value(argc, argv, &i, "--via", &v)) {
			enum via w;
			if (!v || via_parse(v, &w) != 0)
				return usage_error(msg, "watch --via %s: pidfd, bpf or auto",
				                   v ? v : "(missing)");
			a->via = (int)w;
			a->via_given = 1;
		} else if (opt_value(argc, argv, &i, "--journal", &v)) {
			if (!v || !*v)
				return usage_error(msg, "watch --journal: %s", v ? "an empty value"
				                   : "missing PATH");
			a->journal = v;
		} else if (opt_value(argc, argv, &i, "--every", &v)) {
			if (seconds_arg("--every", v, 0.1, 3600, &a->every, msg) != CLI_GO)
				return CLI_BAD;
		} else if (opt_value(argc, argv, &i, "--interval", &v)) {
			if (seconds_arg("--interval", v, 0.01, 60, &a->interval, msg) != CLI_GO)
				return CLI_BAD;
		} else if (opt_value(argc, argv, &i, "--window", &v)) {
			if (seconds_arg("--window", v, 0.1, 3600, &a->window, msg) != CLI_GO)
				return CLI_BAD;
		} else if (opt_value(argc, argv, &i, "--seconds", &v)) {
			if (seconds_arg("--seconds", v, 0.1, 31536000, &a->seconds, msg) != CLI_GO)
				return CLI_BAD;
		} else if (o[0] == '-' && o[1]) {
			return usage_error(msg, "watch: unknown option %s (--listen ADDR:PORT, --textfile "
			                   "PATH, --every, --interval, --window, --apply, --apply-netns, --via, --journal PATH, "
			                   "--seconds)", o);
		} else if (a->ntargets == WATCH_MAX_TARGETS) {
			return usage_error(msg, "watch: at most %d targets", WATCH_MAX_TARGETS);
		} else if (parse_target(o, TARGET_PID | TARGET_PORT | TARGET_CGROUP, &t) != 0 ||
		           (t.kind == TARGET_CGROUP && o[0] != '/')) {
			/* (a cgroup as /proc/PID/cgroup writes it, or a directory of the mount: a
			 * path from /) */
			return usage_error(msg, "watch %s: not a pid, :PORT (:1 to :65535) or cgroup "
			                   "(a path that begins with /)", o);
		} else {
			a->targets[a->ntargets++] = o; /* a cgroup: looked up by watch_main */
		}
	}
	if ((a->napply_netns || a->apply_netns_all) && !a->apply)
		return usage_error(msg, "watch --apply-netns: widens what --apply may change; without "
		                   "--apply watch changes nothing");
	if (a->via_given && !a->apply)
		return usage_error(msg, "watch --via: how --apply reaches a socket; without --apply "
		                   "watch changes nothing");
	if (a->journal && !a->apply)
		return usage_error(msg, "watch --journal: journals what --apply changes; without "
		                   "--apply watch changes nothing");
	if (!a->listen && !a->textfile)
		return usage_error(msg, "watch: where do the metrics go? --listen ADDR:PORT (GET "
		                   "/metrics) or --textfile PATH (node_exporter's textfile collector)");
	return CLI_GO;
}
