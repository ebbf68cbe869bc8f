/* itertune.h's iterator path: the table's options on sockets named by cookie, through one
 * bpfiter.c call in one network namespace.  Each option goes in at the level and name
 * bpf_setsockopt takes for it (st_iter_where: TCP_BPF_DELACK_MAX for TCP_DELACK_MAX_US,
 * IPV6_TCLASS on IPv6), and comes back as the apply step's outcome.  The cwnd clamp is not
 * read by bpf_getsockopt: the kernel sets a connection's snd_ssthresh to the clamp in the
 * same call (tcp_bpf's TCP_BPF_SNDCWND_CLAMP), which sock_diag's tcp_info reports, so that
 * is read right after, in the same namespace. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/diag.h"
#include "host/itertune.h"

int it_add(struct it_sock *s, int opt, int want)
{
	if (s->n >= IT_OPTS)
		return -1;
	s->opt[s->n] = opt;
	s->want[s->n++] = want;
	return 0;
}

struct clamps {
	struct it_sock *s;
	int n;
};

/* the snd_ssthresh of each socket that had its clamp set */
static void on_sock(const struct diag_sock *d, void *ctx)
{
	struct clamps *c = ctx;
	for (int i = 0; i < c->n; i++) {
		struct it_sock *s = &c->s[i];
		if (s->cookie != d->cookie || !d->info_len)
			continue;
		for (int k = 0; k < s->n; k++)
			if (st_iter_how(s->opt[k]) == ST_ITER_SSTHRESH && s->out[k].state == ST_SET)
				s->out[k].got = (int)d->ti.snd_ssthresh;
	}
}

static void read_clamps(int netns_fd, struct it_sock *s, int n)
{
	int any = 0;
	for (int i = 0; i < n && !any; i++)
		for (int k = 0; k < s[i].n && !any; k++)
			any = st_iter_how(s[i].opt[k]) == ST_ITER_SSTHRESH && s[i].out[k].state == ST_SET;
	if (!any)
		return;
	int nl = diag_open_netns(netns_fd);
	if (nl < 0)
		return; /* (left unread: said as such) */
	struct clamps c = {s, n};
	diag_dump(nl, ~0u, 1, on_sock, &c);
	close(nl);
}

int it_run(int netns_fd, struct it_sock *s, int n, int mode, struct bi_run *run, char *err,
           size_t en)
{
	struct bi_sock *b = calloc((size_t)(n > 0 ? n : 1), sizeof *b);
	struct bi_opt(*o)[IT_OPTS] = calloc((size_t)(n > 0 ? n : 1), sizeof *o);
	if (!b || !o) {
		free(b);
		free(o);
		snprintf(err, en, "%s", strerror(ENOMEM));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		b[i].cookie = s[i].cookie;
		b[i].opts = o[i];
		b[i].nopts = s[i].n;
		for (int k = 0; k < s[i].n; k++) {
			st_iter_where(s[i].opt[k], s[i].family, &o[i][k].level, &o[i][k].optname);
			o[i][k].value = mode == IT_READ ? 0 : s[i].want[k];
		}
	}
	int rc = bi_apply(netns_fd, b, n, mode == IT_READ ? BI_READ : BI_SET_READ, run, err, en);
	for (int i = 0; i < n; i++) {
		s[i].visited = b[i].visited;
		for (int k = 0; k < s[i].n; k++) {
			const struct bi_res *r = &b[i].res[k];
			struct st_outcome *out = &s[i].out[k];
			memset(out, 0, sizeof *out);
			out->want = s[i].want[k];
			out->got = ST_UNREAD;
			if (!b[i].visited)
				continue; /* (ST_UNTOUCHED: gone, or never there) */
			if (mode == IT_READ) {
				out->state = ST_FOUND;
				if (r->read_err == 0)
					out->got = r->value;
				else
					out->err = (short)(r->read_err > 0 ? r->read_err : EINVAL);
			} else if (r->err != 0) {
				out->state = ST_FAILED;
				out->err = (short)(r->err > 0 ? r->err : EINVAL);
			} else {
				out->state = ST_SET;
				if (r->read_err == 0)
					out->got = r->value;
			}
		}
	}
	if (mode != IT_READ)
		read_clamps(netns_fd, s, n);
	free(b);
	free(o);
	return rc;
}

int it_usable(char *why, size_t n)
{
	static int known, ok;
	static char said[400];
	if (!known) {
		ok = bi_probe(said, sizeof said) == 0;
		known = 1;
	}
	if (!ok)
		snprintf(why, n, "%s", said);
	return ok;
}
