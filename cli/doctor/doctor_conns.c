/* The connections doctor follows over its window, by socket cookie, and the listener each
 * was accepted from: what its samples (doctor.c) and the connections' ends
 * (doctor_close.c) both look up. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/grow.h"
#include "doctor/doctor.h"

int doc_listener_of(const struct shared_window *d, int ns, const struct diag_sock *s)
{
	int wild = -1;
	for (int k = 0; k < d->nl; k++) {
		const struct doc_listener *l = &d->l[k];
		int m = l->ns != ns ? 0 : diag_listener_takes(l->family, l->addr, l->port, s->family,
		                                               s->src, s->sport);
		if (m == 2)
			return k;
		/* a wildcard of the connection's own family first (0.0.0.0 and a v6only [::]) */
		if (m == 1 && (wild < 0 || l->family == s->family))
			wild = k;
	}
	return wild;
}

/* The connection table: open addressing on the socket cookie, the index doubled as it fills */
static size_t *conn_index;
static size_t conn_index_cap;

struct doc_conn *doc_conn_find(struct shared_window *d, unsigned long long cookie, int add)
{
	if (add && 2 * (d->nc + 1) > conn_index_cap) {
		size_t cap = conn_index_cap ? 2 * conn_index_cap : 4096;
		size_t *idx = malloc(cap * sizeof *idx);
		if (!idx)
			return NULL;
		for (size_t k = 0; k < cap; k++)
			idx[k] = SIZE_MAX;
		for (size_t k = 0; k < d->nc; k++)
			for (size_t h = d->c[k].cookie * 0x9e3779b97f4a7c15ull;; h++)
				if (idx[h & (cap - 1)] == SIZE_MAX) {
					idx[h & (cap - 1)] = k;
					break;
				}
		free(conn_index);
		conn_index = idx;
		conn_index_cap = cap;
	}
	if (!conn_index_cap)
		return NULL;
	for (size_t h = cookie * 0x9e3779b97f4a7c15ull;; h++) {
		size_t *slot = &conn_index[h & (conn_index_cap - 1)];
		if (*slot == SIZE_MAX) {
			if (!add)
				return NULL;
			if (grow(&d->c, &d->cap, d->nc, sizeof *d->c, 1024) != 0)
				return NULL;
			*slot = d->nc;
			struct doc_conn *c = &d->c[d->nc++];
			memset(c, 0, sizeof *c);
			c->cookie = cookie;
			return c;
		}
		if (d->c[*slot].cookie == cookie)
			return &d->c[*slot];
	}
}
