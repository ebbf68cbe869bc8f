/* What a service is made of, as sets: socket inodes (each with what it is to the service),
 * pids, and the process tree from /proc (service.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/service.h"
#include "host/grow.h"

static size_t slot_of(const struct svc_map *m, unsigned long long key)
{
	size_t k = (size_t)(key * 0x9e3779b97f4a7c15ull);
	while (m->keys[k & (m->cap - 1)] && m->keys[k & (m->cap - 1)] != key)
		k++;
	return k & (m->cap - 1);
}

int svc_map_get(const struct svc_map *m, unsigned long long key)
{
	if (!m->cap || !key)
		return -1;
	size_t k = slot_of(m, key);
	return m->keys[k] ? m->vals[k] : -1;
}

int svc_map_put(struct svc_map *m, unsigned long long key, int val)
{
	if (!key)
		return 0;
	if (2 * (m->n + 1) > m->cap) { /* kept half empty: doubled and rehashed */
		struct svc_map g = {NULL, NULL, m->cap ? 2 * m->cap : 1024, 0};
		g.keys = calloc(g.cap, sizeof *g.keys);
		g.vals = calloc(g.cap, sizeof *g.vals);
		if (!g.keys || !g.vals || g.cap > (1u << 26)) {
			free(g.keys);
			free(g.vals);
			return -1;
		}
		for (size_t k = 0; k < m->cap; k++)
			if (m->keys[k])
				svc_map_put(&g, m->keys[k], m->vals[k]);
		svc_map_free(m);
		*m = g;
	}
	size_t k = slot_of(m, key);
	m->n += !m->keys[k];
	m->keys[k] = key;
	m->vals[k] = (unsigned char)val;
	return 0;
}

void svc_map_free(struct svc_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

int svc_pids_has(const struct svc_pids *p, int pid)
{
	for (size_t k = 0; k < p->n; k++)
		if (p->v[k] == pid)
			return 1;
	return 0;
}

void svc_pids_text(const struct svc_pids *p, char *out, size_t n)
{
	size_t len = 0, k = 0;
	out[0] = '\0';
	for (; k < p->n && len + 16 < n; k++)
		len += (size_t)snprintf(out + len, n - len, "%s%d", k ? " " : "", p->v[k]);
	if (k < p->n && len + 4 < n)
		snprintf(out + len, n - len, " ...");
}

int svc_pids_add(struct svc_pids *p, int pid)
{
	if (svc_pids_has(p, pid))
		return 0;
	if (grow(&p->v, &p->cap, p->n, sizeof *p->v, 64) != 0)
		return -1;
	p->v[p->n++] = pid;
	return 1;
}

void svc_children(int pid, struct svc_pids *out)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	DIR *d = opendir(path);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char cpath[sizeof path + 270];
		snprintf(cpath, sizeof cpath, "%s/%s/children", path, e->d_name);
		FILE *f = fopen(cpath, "re");
		int c;
		while (f && fscanf(f, "%d", &c) == 1)
			svc_pids_add(out, c);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

void svc_descendants(int pid, int with_self, struct svc_pids *out)
{
	size_t first = out->n;
	if (svc_pids_add(out, pid) <= 0)
		return;
	for (size_t k = first; k < out->n; k++) /* (grows as children are found) */
		svc_children(out->v[k], out);
	if (!with_self) { /* pid was added here (not there before): take it out again */
		memmove(out->v + first, out->v + first + 1, (out->n - first - 1) * sizeof *out->v);
		out->n--;
	}
}

