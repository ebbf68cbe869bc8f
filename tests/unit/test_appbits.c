/* What the library remembers of an app's own setsockopt (precedence app, shim/precedence.c):
 * one bit of a descriptor's entry per option an app can set, numbered from the option table
 * (st_app_index).  Each option an app can set has a bit of its own inside the entry's field
 * for them, the app's call by its level and name (IPv6's too, and the *FORCE buffers) finds
 * that bit, and no other option (the backlog, logging, the cgroup-only ones) has one.
 * PASS/FAIL per group; a failing case also prints its own line. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/socket.h>

#include "shim.h"

#include "unit.h"

#define FIELD (((1ull << ST_FD_REC_SHIFT) - 1) & ~((1ull << ST_FD_APP_SHIFT) - 1))

static const char *name_of(int i)
{
	static char buf[ST_KEY_MAX];
	return st_opt_key(i, buf, sizeof buf);
}

static void test_each_settable_has_its_bit(void)
{
	uint64_t seen = 0;
	int settable = 0;
	for (int i = 0; i < ST_O_COUNT; i++) {
		uint64_t bit = st_app_bit(i);
		if (!st_is_sockopt(i)) {
			if (bit || st_app_index[i] != -1)
				CASE_FAIL("%s: no app's setsockopt sets it, yet it has bit %#llx (index %d)",
				          name_of(i), (unsigned long long)bit, st_app_index[i]);
			continue;
		}
		settable++;
		int a = st_app_index[i];
		if (a < 0 || a >= ST_A_COUNT || st_app_option[a] != i) {
			CASE_FAIL("%s: index %d (of %d), which names option %d", name_of(i), a, ST_A_COUNT,
			          a >= 0 && a < ST_A_COUNT ? st_app_option[a] : -1);
			continue;
		}
		if (!bit || (bit & (bit - 1)) || (bit & ~FIELD) || (bit & ~APP_BITS))
			CASE_FAIL("%s: bit %#llx is not one bit of the app's field %#llx", name_of(i),
			          (unsigned long long)bit, (unsigned long long)APP_BITS);
		if (bit & seen)
			CASE_FAIL("%s: bit %#llx is another option's too", name_of(i), (unsigned long long)bit);
		seen |= bit;
		if (st_app_options(bit) != 1ull << i)
			CASE_FAIL("%s: its bit reads back as the options %#llx", name_of(i),
			          (unsigned long long)st_app_options(bit));
	}
	if (settable != ST_A_COUNT || seen != APP_BITS)
		CASE_FAIL("%d options an app can set, %d numbered; bits %#llx, field %#llx", settable,
		          ST_A_COUNT, (unsigned long long)seen, (unsigned long long)APP_BITS);
	/* what else the entry holds stays apart: the kind, quick-ack, the listener's record */
	uint64_t rest = ST_FD_KIND_MASK | ST_FD_QUICKACK | (~0ull << ST_FD_REC_SHIFT);
	if (APP_BITS & rest)
		CASE_FAIL("the app's field %#llx overlaps the kind, quick-ack or record bits %#llx",
		          (unsigned long long)APP_BITS, (unsigned long long)rest);
	end_group("appbits_each_settable_has_its_bit");
}

/* The bit the app's own setsockopt(level, optname) sets is its option's. */
static void test_app_call_finds_the_bit(void)
{
	for (int i = 0; i < ST_O_COUNT; i++) {
		const struct st_sockopt *o = &st_sockopts[i];
		if (!st_is_sockopt(i))
			continue;
		int k = st_opt_lookup(o->level, o->optname);
		if (k < 0 || st_app_bit(k) != st_app_bit(i))
			CASE_FAIL("%s: setsockopt(%d, %s) finds option %d, bit %#llx", name_of(i), o->level,
			          o->label, k, k < 0 ? 0ull : (unsigned long long)st_app_bit(k));
		if (!o->label6)
			continue;
		k = st_opt_lookup(o->level6, o->optname6);
		if (k < 0 || st_app_bit(k) != st_app_bit(i))
			CASE_FAIL("%s: setsockopt(%d, %s) on IPv6 finds option %d", name_of(i), o->level6,
			          o->label6, k);
	}
	static const struct { int level, optname, option; } force[] = {
		{SOL_SOCKET, SO_RCVBUFFORCE, ST_V_RCVBUF}, {SOL_SOCKET, SO_SNDBUFFORCE, ST_V_SNDBUF},
		{IPPROTO_TCP, 44 /* TCP_RTO_MAX_MS, the kernel's number */, ST_V_RTO_MAX},
	};
	for (size_t c = 0; c < sizeof force / sizeof force[0]; c++) {
		int k = st_opt_lookup(force[c].level, force[c].optname);
		if (k < 0 || !st_app_bit(k) || st_app_bit(k) != st_app_bit(force[c].option))
			CASE_FAIL("setsockopt(%d, %d) finds option %d, not %s's bit", force[c].level,
			          force[c].optname, k, name_of(force[c].option));
	}
	/* nothing an app calls reaches a variable that is no socket option */
	static const int none[][2] = {{IPPROTO_TCP, TCP_QUICKACK}, {SOL_SOCKET, SO_REUSEADDR},
	                              {IPPROTO_TCP, TCP_INFO}};
	for (size_t c = 0; c < sizeof none / sizeof none[0]; c++)
		if (st_opt_lookup(none[c][0], none[c][1]) >= 0)
			CASE_FAIL("setsockopt(%d, %d) finds option %d", none[c][0], none[c][1],
			          st_opt_lookup(none[c][0], none[c][1]));
	end_group("appbits_app_call_finds_the_bit");
}

int main(void)
{
	test_each_settable_has_its_bit();
	test_app_call_finds_the_bit();
	printf("INFO appbits: %d of the entry's %d bits for the app's own options taken\n", ST_A_COUNT,
	       ST_FD_REC_SHIFT - ST_FD_APP_SHIFT);
	return failures ? 1 : 0;
}
