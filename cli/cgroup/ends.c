/* One end of a connection in the cgroup, read and said: the probe's (readback.c) and the
 * program's own (appread.c) alike, each option the policy sets read back and logged with the
 * clamp and its fix where a sysctl cut one, or the refusal. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socktune.h"
#include "socktune_kernel.h"
#include "socktune_opts.h"
#include "cgroup/cgroup.h"
#include "record.h"

/* What the congestion control leaves in snd_ssthresh when it keeps none (BBR: it sets it at
 * its init, after the sock_ops program's TCP_BPF_SNDCWND_CLAMP wrote the clamp there) */
#define TCP_INFINITE_SSTHRESH 0x7fffffffu
#define MAX_FIXES 4 /* (the buffers, at most two, cut by their sysctls) */


void cg_read_end(int fd, const struct st_policy *p, int outgoing, struct cg_end *e)
{
	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	int have_info = getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0;
	e->clamp_hidden = 0;
	for (int i = 0; i < ST_O_COUNT; i++) {
		long long want;
		e->got[i] = UNREAD;
		if (!st_sockops_sets(p, i, outgoing, &want))
			continue;
		if (i == ST_V_INITCWND && have_info)
			e->got[i] = ti.tcpi_snd_cwnd;
		else if (i == ST_V_CWND_CLAMP && have_info && ti.tcpi_snd_ssthresh >= TCP_INFINITE_SSTHRESH)
			e->clamp_hidden = 1; /* (the clamp itself, snd_cwnd_clamp, no call shows) */
		else if (i == ST_V_CWND_CLAMP && have_info)
			e->got[i] = ti.tcpi_snd_ssthresh; /* (TCP_BPF_SNDCWND_CLAMP sets both) */
		if (!st_is_sockopt(i))
			continue; /* the SYN RTO and the initial receive window: no getsockopt */
		int level, optname, v = 0;
		const char *label;
		st_sockopt_for(i, AF_INET, &level, &optname, &label);
		if (st_sockopts[i].flags & ST_O_NAME) {
			socklen_t l = sizeof e->name[i] - 1;
			memset(e->name[i], 0, sizeof e->name[i]);
			if (getsockopt(fd, level, optname, e->name[i], &l) == 0)
				e->got[i] = 1;
			continue;
		}
		socklen_t l = sizeof v;
		if (getsockopt(fd, level, optname, &v, &l) == 0)
			e->got[i] = (st_sockopts[i].flags & ST_O_UNSIGNED) ? (long long)(unsigned)v : v;
	}
}

static long long limit_of(const struct host *h, int i)
{
	const char *limit = st_sockopts[i].limit;
	return limit ? host_num(h, limit, 0) : -1;
}

/* What a program's own connection that reads another value than the policy's needs.  The
 * cgroup's program sets its values once, at the handshake, and the program's own
 * setsockopt after it wins, except on an option the setsockopt hook holds (hook.c), whose
 * value it writes over the program's: an option held that still reads another value was
 * changed past the hook (a kernel that refused it, or a value the kernel took otherwise),
 * a real surprise; one the hook cannot hold (a name in a buffer too short for ours) is the
 * preload's to hold.  (The probe, which sets nothing, shows neither.) */
#define APP_CURE_HELD "an option the setsockopt hook holds reads another value: not the " \
	"program's own setsockopt (the hook writes the policy's value over it), so something " \
	"past it; socktune's bug if the kernel reports nothing, report it with this line"
#define APP_CURE "the program set it itself after the handshake, and the setsockopt hook " \
	"cannot hold it: the preload (socktune [OPTIONS] -- PROGRAM, without --cgroup; a " \
	"dynamically linked program) holds the policy's value against the program's own " \
	"setsockopt"

/* One end's line (app: the program's own connection, else the probe's); 1 when a value was
 * not applied (the kernel refused it; on the program's own connection: it reads another). */
int cg_say_end(const struct st_policy *p, const struct cg_end *e, int outgoing,
                   const struct host *h, const char *dir, int insns, unsigned prog_id, int app)
{
	struct rec *r = rec_new();
	int clamped = 0, refused = 0, held = 0;
	char fix[320] = "", why[400] = "", fixes[MAX_FIXES][96], unread[64] = "";
	if (!r)
		return 0;
	for (int i = 0; i < ST_O_COUNT; i = st_opt_next(i)) {
		long long want, got = e->got[i];
		if (!st_sockops_sets(p, i, outgoing, &want))
			continue;
		unsigned flags = st_sockopts[i].flags;
		int k = K_OPTION + i;
		/* as the library writes it: a buffer or a duration its group (want, effective), any
		 * other option the value read back (a name, a flag, a number) */
		enum rec_type type = rec_key_type(k);
		if (flags & ST_O_NAME) {
			rec_str(r, k, got == UNREAD ? NULL : e->name[i]);
			if (got != UNREAD && strcmp(e->name[i], st_opt_name(p, i)) != 0 && !refused++)
				snprintf(why, sizeof why, "--%s %s: reads %s", st_vars[i].option,
				         st_opt_name(p, i), e->name[i]);
			continue;
		}
		struct rec *g = type == REC_GROUP ? rec_group(r, k) : NULL;
		if (g)
			rec_int(g, K_WANT, want);
		if (got == UNREAD) {
			rec_null(g ? g : r, g ? K_EFFECTIVE : k);
			/* The initial receive window and the SYN RTO are answers to the kernel's
			 * questions at the handshake: no getsockopt or tcp_info field holds them
			 * afterwards (the window is the smaller of this and the buffer's; a SYN's
			 * timer shows only when a SYN is lost), so they are named as not read; so is
			 * the cwnd clamp where the congestion control (BBR) keeps no ssthresh, the one
			 * field that shows it. */
			if ((!st_is_sockopt(i) && i != ST_V_INITCWND && i != ST_V_CWND_CLAMP) ||
			    (i == ST_V_CWND_CLAMP && e->clamp_hidden))
				snprintf(unread + strlen(unread), sizeof unread - strlen(unread), "%s%s",
				         unread[0] ? "," : "", st_vars[i].option);
			continue;
		}
		if (g)
			rec_int(g, K_EFFECTIVE, got);
		else if (type == REC_BOOL)
			rec_bool(r, k, got != 0);
		else
			rec_int(r, k, got);
		/* a duration is kept in jiffies, rounded up: anything else read back (the default)
		 * is a refusal, even when larger than asked */
		if ((flags & ST_O_NOT_COMPARED) || st_took(i, want, got, h->hz))
			continue;
		long long limit = limit_of(h, i);
		if ((flags & ST_O_BUFFER) && limit >= 0 && got >= st_expect(i, want, 0, limit)) {
			/* cut by its sysctl, as setsockopt would have been */
			if (!clamped) { /* the first clamp's limit: the fixes name every one */
				rec_str(r, K_LIMIT, st_sockopts[i].limit);
				rec_int(r, K_LIMIT_VALUE, limit);
			}
			if (clamped < MAX_FIXES)
				st_fix_sysctl(i, want, fixes[clamped++], sizeof fixes[0]);
			continue;
		}
		if (!refused++) {
			char key[ST_KEY_MAX + 4];
			held = app == 2 && (cg_hold_ends(p, 1, i) & (1 << outgoing));
			snprintf(why, sizeof why, "%s.want=%lld (it reads %lld)",
			         rec_key_name(K_OPTION + i, key, sizeof key), want, got);
			st_fix_refused(i < ST_V_COUNT ? i : ST_V_KEEPALIVE, EINVAL, fix, sizeof fix);
		}
	}
	if (clamped && !refused) {
		struct rec *f = rec_arr(r, K_FIX);
		for (int k = 0; k < clamped; k++)
			rec_str(f, K_FIX, fixes[k]);
	}
	struct rec *head = rec_new();
	if (head) {
		rec_int(head, K_PID, (long long)getpid());
		rec_str(head, K_LEVEL, refused ? (app ? "warn" : "error") : clamped ? "warn" : "info");
		rec_str(head, K_EVENT, "cgroup");
		rec_str(head, K_CGROUP, dir);
		rec_int(head, K_PROG_ID, prog_id);
		rec_int(head, K_INSNS, insns);
		rec_str(head, K_CONN, outgoing ? "outgoing" : "accepted");
		rec_str(head, K_STS_SOURCE, app ? "app" : "probe");
		if (unread[0])
			rec_str(head, K_NOT_READABLE, unread);
		if (app && refused)
			rec_str(head, K_NOTE, held ? APP_CURE_HELD : APP_CURE);
		fputs("socktune ", stderr);
		rec_write_logfmt(stderr, head);
		fputc(' ', stderr);
		rec_write_logfmt(stderr, r);
		fputc('\n', stderr);
		rec_free(head);
	}
	rec_free(r);
	if (refused && !app)
		fprintf(stderr, "socktune: --cgroup: the kernel did not apply %s on a probe connection "
		        "in the cgroup%s%s; nothing is left attached\n", why, fix[0] ? ": " : "", fix);
	return refused != 0;
}
