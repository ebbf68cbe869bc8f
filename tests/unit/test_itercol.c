/* The option table's iterator column (include/socktune_opts.h, st_iter_how/why/where):
 * derived from the sockops column, with its exceptions.  Every option a cgroup sock_ops
 * program sets with bpf_setsockopt is set by the TCP iterator too, at the same level and name
 * (TCP_BPF_DELACK_MAX for TCP_DELACK_MAX_US; IPV6_TCLASS for IP_TOS on IPv6), read back by
 * bpf_getsockopt, but the cwnd clamp (tcp_info's ssthresh); none that only a new connection
 * takes (TCP_BPF_IW, the callbacks' replies), no name, not TCP_SYNCNT, not the backlog nor
 * quick-ack, each with a reason that names the path that sets it.  PASS/FAIL per group. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "socktune_opts.h"

#include "unit.h"

static const char *name_of(int i)
{
	static char buf[ST_KEY_MAX];
	return st_opt_key(i, buf, sizeof buf);
}

static void test_derived(void)
{
	int taken = 0;
	for (int i = 0; i < ST_O_COUNT; i++) {
		const struct st_sockopt *o = &st_sockopts[i];
		int how = st_iter_how(i);
		const char *why = st_iter_why(i);
		int expect = o->sockops == ST_SOCKOPS_SET && o->bpf_optname != ST_TCP_BPF_IW &&
		             !(o->flags & (ST_O_NAME | ST_O_CLIENT_ONLY));
		if ((how != ST_ITER_NONE) != expect)
			CASE_FAIL("%s: iterator %d, the sockops column says %d", name_of(i), how, expect);
		if ((how == ST_ITER_NONE) != (why != NULL))
			CASE_FAIL("%s: iterator %d with reason %s", name_of(i), how, why ? why : "(none)");
		taken += how != ST_ITER_NONE;
	}
	if (taken < 15)
		CASE_FAIL("only %d options through the iterator", taken);
	end_group("itercol_derived_from_sockops");
}

static void test_where_and_readback(void)
{
	static const struct {
		int opt, family, level, optname, how;
	} cases[] = {
		{ST_V_NODELAY, AF_INET, IPPROTO_TCP, TCP_NODELAY, ST_ITER_GET},
		{ST_V_RCVBUF, AF_INET6, SOL_SOCKET, SO_RCVBUF, ST_ITER_GET},
		{ST_V_DELACK_MAX, AF_INET, IPPROTO_TCP, ST_TCP_BPF_DELACK_MAX, ST_ITER_GET},
		{ST_V_RTO_MIN, AF_INET6, IPPROTO_TCP, ST_TCP_BPF_RTO_MIN, ST_ITER_GET},
		{ST_V_TOS, AF_INET, IPPROTO_IP, IP_TOS, ST_ITER_GET},
		{ST_V_TOS, AF_INET6, IPPROTO_IPV6, IPV6_TCLASS, ST_ITER_GET},
		{ST_V_CWND_CLAMP, AF_INET, IPPROTO_TCP, ST_TCP_BPF_SNDCWND_CLAMP, ST_ITER_SSTHRESH},
		{ST_O_KEEPIDLE, AF_INET, IPPROTO_TCP, TCP_KEEPIDLE, ST_ITER_GET},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		int level, optname;
		st_iter_where(cases[c].opt, cases[c].family, &level, &optname);
		if (level != cases[c].level || optname != cases[c].optname ||
		    st_iter_how(cases[c].opt) != cases[c].how)
			CASE_FAIL("%s on family %d: (%d, %d) read %d, want (%d, %d) read %d",
			          name_of(cases[c].opt), cases[c].family, level, optname,
			          st_iter_how(cases[c].opt), cases[c].level, cases[c].optname, cases[c].how);
	}
	end_group("itercol_where_and_readback");
}

static void test_refused_with_the_other_path(void)
{
	static const struct {
		int opt;
		const char *names;
	} cases[] = {
		{ST_V_BACKLOG, "--via pidfd"},   {ST_V_BACKLOG_MIN, "--via pidfd"},
		{ST_V_QUICKACK, "--delack-max"}, {ST_V_INITCWND, "attach --cgroup"},
		{ST_V_INITRWND, "attach --cgroup"}, {ST_V_SYN_RTO, "attach --cgroup"},
		{ST_V_CONGESTION, "--via pidfd"}, {ST_V_SYNCNT, "SYNs"},
		{ST_V_DEFER_ACCEPT, "--via pidfd"},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const char *why = st_iter_why(cases[c].opt);
		if (st_iter_how(cases[c].opt) != ST_ITER_NONE || !why || !strstr(why, cases[c].names))
			CASE_FAIL("%s: iterator %d, reason \"%s\" (want it to name %s)",
			          name_of(cases[c].opt), st_iter_how(cases[c].opt), why ? why : "",
			          cases[c].names);
	}
	end_group("itercol_refused_naming_the_other_path");
}

int main(void)
{
	test_derived();
	test_where_and_readback();
	test_refused_with_the_other_path();
	return failures ? 1 : 0;
}
