/* What test_findings and test_findings_rules share: doctor's rules and what they read,
 * included whole (the Makefile's FINDINGS_UNIT_SRC), the window they judge and the one
 * listener it starts from, and a connection to it. */
#ifndef ST_FINDINGS_HARNESS_H
#define ST_FINDINGS_HARNESS_H

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "findings/findings.c"
#include "findings/findings_queue.c"
#include "findings/findings_memory.c"
#include "findings/findings_path.c"
#include "findings/closed.c"
#include "findings/fixes.c"
#include "findings/rules.c"
#include "host/diag.c"
#include "host/holders.c"
#include "host/grow.c"
#include "host/pidinfo.c"
#include "record.c"
#include "unit.h"

static struct shared_window d;
static struct doc_conn conns[8];
static struct doc_findings found;

/* One listener on 127.0.0.1:8000 (backlog 5, somaxconn 4096), no process visible */
static void reset(void)
{
	memset(&d, 0, sizeof d);
	memset(conns, 0, sizeof conns);
	d.nns = 1;
	d.ns[0].ours = 1;
	d.ns[0].somaxconn = 4096;
	d.ns[0].rmem_max = d.ns[0].wmem_max = 4194304;
	d.ns[0].tcp_mem[2] = 1 << 20;
	d.elapsed_s = 3;
	d.nl = 1;
	d.l[0].family = AF_INET;
	d.l[0].port = 8000;
	d.l[0].backlog = 5;
	d.l[0].nodelay = 0;
	d.l[0].addr[0] = 127, d.l[0].addr[3] = 1;
	d.l[0].seen_last = 1;
	d.l[0].service = -1;
	d.c = conns;
}

/* The listener held by pid 4242 (a master; workers may hold its connections), a service */
static void held(void)
{
	d.l[0].nowners = 1;
	d.l[0].owners[0].pid = 4242;
	d.l[0].service = 0;
}

/* An established connection to the listener, sampled 10 times over 3 s, min_rtt 10 us, its
 * TCP_NODELAY not readable (-2) and no holder found */
static struct doc_conn *conn(void)
{
	struct doc_conn *c = &conns[d.nc++];
	c->listener = 0;
	c->nodelay = -2;
	c->samples = 10;
	c->first_t = 0;
	c->last_t = 3;
	c->last.state = TS_ESTABLISHED;
	c->last.ti.min_rtt = 10;
	c->pid = c->fd = -1;
	return c;
}

/* MQTT at QoS 1 against NODELAY on the server: between the two samples 141 messages of 10
 * bytes came in and 141 went out, with 136 pure ACKs besides, the delayed ACK's timeout at
 * 40 ms (what delayed-ack-client-nagle is named on) */
static struct doc_conn *client_nagle_conn(void)
{
	struct doc_conn *c = conn();
	c->first.ti.data_segs_in = c->first.ti.data_segs_out = 10;
	c->first.ti.segs_out = 20, c->first.ti.bytes_received = c->first.ti.bytes_sent = 100;
	c->last.ti.data_segs_in = c->last.ti.data_segs_out = 10 + 141;
	c->last.ti.segs_out = 20 + 141 + 136;
	c->last.ti.bytes_received = c->last.ti.bytes_sent = 100 + 1410;
	c->max_ato = 40000, c->nodelay = 1;
	return c;
}

#endif
