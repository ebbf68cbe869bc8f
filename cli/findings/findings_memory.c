/* The buffers' findings: a listener's buffer held at the namespace's cap while it matters
 * (buffer-clamped), and the connections' buffers against the kernel's TCP memory limit
 * (memory-exposure).  Split from findings.c, whose helpers and record they share. */
#include <stdio.h>
#include <unistd.h>

#include "socktune_kernel.h"
#include "findings/window.h"
#include "findings/findings.h"

/* A counter's change, 0 when unknown: for a sum of pressures */
static long long known(const struct doc_ns *ns, int k)
{
	long long v = doc_ns_delta(ns, k);
	return v > 0 ? v : 0;
}

/* A listener's buffer at exactly twice the namespace's cap (asked for more, or for just
 * that), and the pressure that makes it matter: the namespace dropped or pruned received
 * data, or the listener's connections waited for room to send. */
void doc_judge_buffer_clamped(const struct shared_window *d, struct doc_findings *fs)
{
	for (int l = 0; l < d->nl; l++) {
		const struct doc_listener *L = &d->l[l];
		const struct doc_ns *ns = &d->ns[L->ns];
		long long rcv_pressure = known(ns, C_RCVQ_DROP) + known(ns, C_PRUNE), snd_pressure = 0;
		for (size_t k = 0; k < d->nc; k++) {
			const struct doc_conn *c = &d->c[k];
			uint64_t part = DOC_DELTA(c, sndbuf_limited);
			if (c->listener == l && part >= LIMITED_MIN_US &&
			    doc_share(part, DOC_DELTA(c, busy_time)) >= LIMITED_SHARE)
				snd_pressure++;
		}
		for (int snd = 0; snd < 2; snd++) {
			long long cap = snd ? ns->wmem_max : ns->rmem_max;
			uint32_t have = snd ? L->tb : L->rb;
			if (cap <= 0 || have != 2 * cap || (snd ? snd_pressure : rcv_pressure) <= 0)
				continue;
			struct doc_finding *f = doc_add(fs, DOC_R_BUFFER_CLAMPED, SEV_WARNING,
			                                "medium", d, l);
			if (!f)
				return;
			const char *sys = snd ? "net.core.wmem_max" : "net.core.rmem_max";
			snprintf(f->summary, sizeof f->summary, "%s is at its cap, twice %s, while %s",
			         snd ? "SO_SNDBUF" : "SO_RCVBUF", sys,
			         snd ? "connections waited for room to send" : "received data was dropped");
			doc_listener_evidence(f, d, l);
			rec_int(rec_group(f->evidence, K_OPTION + (snd ? ST_V_SNDBUF : ST_V_RCVBUF)),
			        K_EFFECTIVE, have);
			rec_str(f->evidence, K_LIMIT, sys);
			rec_int(f->evidence, K_LIMIT_VALUE, cap);
			if (snd)
				rec_int(f->evidence, K_SNDBUF_LIMITED_CONNECTIONS, snd_pressure);
			else {
				doc_counter(f, ns, C_RCVQ_DROP);
				doc_counter(f, ns, C_PRUNE);
			}
			char pre[64], flags[48];
			doc_in_ns(d, l, pre, sizeof pre);
			doc_fix(f, "%ssysctl -w %s=%lld", pre, sys, 4 * cap);
			snprintf(flags, sizeof flags, "--%s %lld", snd ? "sndbuf" : "rcvbuf", 2 * cap);
			doc_fix_flags(f, d, l, flags, 0);
			doc_note(f, "the buffer the kernel grants is twice what is asked, up to twice %s",
			         sys);
		}
	}
}

/* The memory the listeners' connections may hold against the kernel's TCP memory limit: each
 * buffer's size as the kernel has it now (autotuning grows them), and what they hold now */
void doc_judge_memory_exposure(const struct shared_window *d, struct doc_findings *fs)
{
	long long bytes = 0, used = 0, open = 0;
	for (size_t k = 0; k < d->nc; k++) {
		const struct doc_conn *c = &d->c[k];
		/* (open at the end of the window: a closed one holds nothing) */
		if (c->last.has_mem && c->last.state == TS_ESTABLISHED && c->last_t == d->final_t) {
			bytes += (long long)c->last.mem[MEM_RCVBUF] + c->last.mem[MEM_SNDBUF];
			used += (long long)c->last.mem[MEM_RMEM] + c->last.mem[MEM_QUEUED];
			open++;
		}
	}
	const struct doc_ns *ns = &d->ns[0];
	long long page = sysconf(_SC_PAGESIZE), high = ns->tcp_mem[2] * page;
	/* only a possibility while they hold little (the kernel's usual overcommit): a finding
	 * once a tenth of the limit is in use */
	if (!open || ns->tcp_mem[2] <= 0 || bytes <= high || 10 * used < high)
		return;
	struct doc_finding *f = doc_add(fs, DOC_R_MEMORY_EXPOSURE, SEV_WARNING, "medium", d, -1);
	if (!f)
		return;
	snprintf(f->summary, sizeof f->summary, "the connections' buffers, if filled, exceed the "
	         "kernel's TCP memory limit: past it, TCP drops and shrinks on every socket");
	rec_int(f->evidence, K_CONNECTIONS_OPEN, open);
	rec_num(f->evidence, K_BUFFERS_MIB, bytes / 1048576.0, 0);
	rec_num(f->evidence, K_IN_USE_MIB, used / 1048576.0, 1);
	rec_num(f->evidence, K_TCP_MEM_HIGH_MIB, high / 1048576.0, 0);
	doc_note(f, "smaller --rcvbuf/--sndbuf for this many connections, or a larger "
	         "net.ipv4.tcp_mem (its third number, in pages)");
}
