/* The records of what socktune attached to cgroups (owned.h): written before the attach,
 * removed after the detach, read to know ours, and swept for what a dead wrapper left. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host/bpf_abi.h"
#include "host/bpfhost.h"
#include "host/owned.h"
#include "host/grow.h"

#define RECORD_HEAD "socktune-cgroup-record 1\n"

/* The directory when RUNTIME_DIRECTORY is not set: the same for every run of this user. */
static void default_dir(char *out, size_t n)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (geteuid() == 0 || !xdg || xdg[0] != '/')
		snprintf(out, n, "/run/socktune");
	else
		snprintf(out, n, "%s/socktune", xdg);
}

/* The directory records are written to: $RUNTIME_DIRECTORY's first, else the default. */
static void write_dir(char *out, size_t n)
{
	const char *rt = getenv("RUNTIME_DIRECTORY");
	if (rt && rt[0] == '/')
		snprintf(out, n, "%.*s", (int)strcspn(rt, ":"), rt); /* (its first, when it lists several) */
	else
		default_dir(out, n);
}

int own_dir(char *out, size_t n, char *err, size_t en)
{
	write_dir(out, n);
	if (mkdir(out, 0700) != 0 && errno != EEXIST) {
		snprintf(err, en, "%s: mkdir: %s", out, strerror(errno));
		return -1;
	}
	struct stat st;
	if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		snprintf(err, en, "%s: not a directory of this user's that only it may write: the "
		         "records of socktune's programs are not kept there (set RUNTIME_DIRECTORY)", out);
		return -1;
	}
	return 0;
}

/* p from the program's descriptor (BPF_OBJ_GET_INFO_BY_FD: no CAP_SYS_ADMIN needed). */
static int prog_of_fd(int fd, struct own_prog *p)
{
	struct st_bpf_prog_info info;
	memset(&info, 0, sizeof info);
	struct st_bpf_info_by_fd a = {.bpf_fd = (uint32_t)fd, .info_len = sizeof info,
	                              .info = (uintptr_t)&info};
	if (cg_bpf(ST_BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a) != 0)
		return -1;
	p->id = info.id;
	for (int k = 0; k < 8; k++)
		snprintf(p->tag + 2 * k, 3, "%02x", info.tag[k]);
	p->load_time = info.load_time;
	return 0;
}

/* A directory of records readable as this user's own: 1, else 0. */
static int dir_ok(const char *dir)
{
	struct stat st;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 022);
}

int own_lock(void)
{
	char dir[4096], path[4200], err[300];
	if (own_dir(dir, sizeof dir, err, sizeof err) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct timespec tick = {0, 10 * 1000 * 1000};
	for (int k = 0; fd >= 0 && k < 200; k++) { /* (2 s at most: then without it) */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK && errno != EINTR)
			break;
		nanosleep(&tick, NULL);
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

void own_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* (the lock goes with it) */
}

int own_prog_now(unsigned id, struct own_prog *p)
{
	struct st_bpf_get_id g = {.id = id};
	int fd = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &g, sizeof g);
	if (fd < 0)
		return -1;
	int r = prog_of_fd(fd, p);
	close(fd);
	return r;
}

unsigned long long own_start_of(int pid)
{
	char path[64], buf[1024];
	if (pid > 0)
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
	else
		snprintf(path, sizeof path, "/proc/self/stat");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t r = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (r <= 0)
		return 0;
	buf[r] = '\0';
	const char *p = strrchr(buf, ')'); /* (the name may hold anything, a ")" too) */
	unsigned long long start = 0;
	/* after ") ": state is field 3; the start time is field 22 */
	if (!p || sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
	                 "%*s %*s %*s %llu", &start) != 1)
		return 0;
	return start;
}

int own_alive(const struct own_rec *r)
{
	return r->pid > 0 && r->start && own_start_of(r->pid) == r->start;
}

int own_write(struct own_rec *r, char *err, size_t en)
{
	char dir[4096], tmp[4300];
	if (!r->file[0]) { /* (a wrapper's by its pid and start; attach's by cgroup and program) */
		if (own_dir(dir, sizeof dir, err, en) != 0)
			return -1;
		if (strcmp(r->kind, "run") == 0)
			snprintf(r->file, sizeof r->file, "%s/cg-run-%d-%llu.rec", dir, r->pid, r->start);
		else
			snprintf(r->file, sizeof r->file, "%s/cg-%llu-%u.rec", dir, r->cgroup_id,
			         r->nprogs ? r->prog[0].id : 0);
	}
	const char *path = r->file, *base = strrchr(path, '/');
	snprintf(tmp, sizeof tmp, "%.*s.%s.%d", (int)(base + 1 - path), path, base + 1, (int)getpid());
	char text[8192];
	int len = snprintf(text, sizeof text, RECORD_HEAD "kind %s\npid %d\nstart %llu\ncgroup_id %llu\n"
	                   "made %d\n", r->kind, r->pid, r->start, r->cgroup_id, r->made);
	for (int k = 0; k < r->nprogs && len < (int)sizeof text; k++)
		len += snprintf(text + len, sizeof text - len, "prog %u %s %llu %d\n", r->prog[k].id,
		                r->prog[k].tag, r->prog[k].load_time, r->prog[k].attach_type);
	if (len < (int)sizeof text && r->held[0])
		len += snprintf(text + len, sizeof text - len, "held %s\n", r->held);
	if (len < (int)sizeof text)
		len += snprintf(text + len, sizeof text - len, "cgroup %s\n", r->cgroup);
	if (len >= (int)sizeof text || strchr(r->cgroup, '\n')) {
		snprintf(err, en, "%s: the cgroup's path cannot be written down", r->cgroup);
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, en, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	ssize_t w = write(fd, text, (size_t)len);
	int e = errno;
	if (close(fd) != 0 && w == len)
		w = -1, e = errno;
	if (w != len || rename(tmp, path) != 0) {
		e = w != len ? (w < 0 ? e : ENOSPC) : errno;
		unlink(tmp);
		snprintf(err, en, "%s: %s", path, strerror(e));
		return -1;
	}
	return 0;
}

void own_remove(const struct own_rec *r)
{
	if (r->file[0])
		unlink(r->file);
}

/* One record file, read from the directory's descriptor: 0, or -1 (not one of ours). */
static int read_one(int dfd, const char *dir, const char *name, struct own_rec *r)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	char text[8192];
	ssize_t len = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    st.st_size < (off_t)sizeof text)
		len = read(fd, text, sizeof text - 1);
	close(fd);
	if (len <= 0)
		return -1;
	text[len] = '\0';
	if (strncmp(text, RECORD_HEAD, strlen(RECORD_HEAD)) != 0)
		return -1;
	memset(r, 0, sizeof *r);
	snprintf(r->file, sizeof r->file, "%s/%s", dir, name);
	int fields = 0;
	for (char *line = text + strlen(RECORD_HEAD), *next; *line; line = next) {
		next = strchr(line, '\n');
		if (!next)
			return -1; /* (cut short) */
		*next++ = '\0';
		struct own_prog *p = &r->prog[r->nprogs];
		if (sscanf(line, "kind %7s", r->kind) == 1 || sscanf(line, "pid %d", &r->pid) == 1 ||
		    sscanf(line, "start %llu", &r->start) == 1 || sscanf(line, "made %d", &r->made) == 1 ||
		    sscanf(line, "cgroup_id %llu", &r->cgroup_id) == 1)
			fields++;
		else if (r->nprogs < OWN_MAX_PROGS &&
		         sscanf(line, "prog %u %16s %llu %d", &p->id, p->tag, &p->load_time, &p->attach_type) == 4)
			r->nprogs++;
		else if (strncmp(line, "held ", 5) == 0 && strlen(line + 5) < sizeof r->held)
			strcpy(r->held, line + 5);
		else if (strncmp(line, "cgroup /", 8) == 0 && strlen(line + 7) < sizeof r->cgroup)
			strcpy(r->cgroup, line + 7), fields++;
	}
	return fields == 6 ? 0 : -1;
}

/* The records in dir appended to *out (n of them, cap room): the new n.  A temporary file a
 * writer killed mid-write left (".NAME.PID", its pid gone) is removed. */
static int read_dir(const char *dir, struct own_rec **out, int n, size_t *cap)
{
	DIR *d = dir_ok(dir) ? opendir(dir) : NULL;
	if (!d)
		return n;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		const char *dot = strrchr(e->d_name, '.');
		if (strncmp(e->d_name, ".cg-", 4) == 0 && dot && dot > e->d_name + 4) {
			char *end;
			long pid = strtol(dot + 1, &end, 10);
			if (!*end && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
				unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		if (strncmp(e->d_name, "cg-", 3) != 0 || l < 8 || strcmp(e->d_name + l - 4, ".rec") != 0)
			continue;
		if (grow(out, cap, (size_t)n, sizeof **out, 8) != 0)
			break;
		if (read_one(dirfd(d), dir, e->d_name, &(*out)[n]) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int own_read_all(struct own_rec **out)
{
	char dir[4096], def[4096];
	int n = 0;
	size_t cap = 0;
	*out = NULL;
	write_dir(dir, sizeof dir); /* (read, not made: a reader such as doctor leaves no trace) */
	n = read_dir(dir, out, n, &cap);
	default_dir(def, sizeof def); /* (also read where a run without RUNTIME_DIRECTORY writes) */
	if (strcmp(def, dir) != 0)
		n = read_dir(def, out, n, &cap);
	return n;
}

const struct own_rec *own_find(unsigned id, const struct own_rec *recs, int n)
{
	struct own_prog now;
	if (!id || own_prog_now(id, &now) != 0)
		return NULL;
	for (int k = 0; k < n; k++)
		for (int j = 0; j < recs[k].nprogs; j++)
			if (recs[k].prog[j].id == id && strcmp(recs[k].prog[j].tag, now.tag) == 0 &&
			    recs[k].prog[j].load_time == now.load_time)
				return &recs[k];
	return NULL;
}

int own_populated(const char *dir)
{
	char path[4200], line[64];
	snprintf(path, sizeof path, "%s/cgroup.events", dir);
	FILE *f = fopen(path, "re");
	int populated = 0;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "populated ", 10) == 0)
			populated = strtol(line + 10, NULL, 10) != 0;
	if (f)
		fclose(f);
	return populated;
}

/* dfd's entry name and the cgroups below it removed, deepest first (by descriptors: a path
 * swapped meanwhile is not followed), at most 32 levels down. */
static int rmtree_at(int dfd, const char *name, int depth)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 && depth < 32 ? fdopendir(fd) : NULL;
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				rmtree_at(dirfd(d), e->d_name, depth + 1); /* (its files cannot go: cgroups) */
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	return unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

int own_rmtree(const char *dir)
{
	char parent[4096];
	const char *base = strrchr(dir, '/');
	if (!base || !base[1] || (size_t)(base - dir) >= sizeof parent) {
		errno = EINVAL;
		return -1;
	}
	snprintf(parent, sizeof parent, "%.*s", base == dir ? 1 : (int)(base - dir), dir);
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -1;
	int r = rmtree_at(pfd, base + 1, 0), e = errno;
	close(pfd);
	errno = e;
	return r;
}

/* Where r's cgroup is, seen from here: 1 there (the same inode; a record of a cgroup being
 * made, the directory), 0 gone (its parent is a cgroup2 directory without it, or with another
 * one there now), -1 not to be judged from here (no cgroup2 at its parent: another mount
 * namespace, `ip netns exec`'s fresh /sys). */
static int where_is(const struct own_rec *r)
{
	struct stat st;
	if (stat(r->cgroup, &st) == 0 && cg_is_v2(r->cgroup))
		return !r->cgroup_id || (unsigned long long)st.st_ino == r->cgroup_id;
	char parent[4096];
	const char *base = strrchr(r->cgroup, '/');
	if (!base || base == r->cgroup || (size_t)(base - r->cgroup) >= sizeof parent)
		return -1;
	snprintf(parent, sizeof parent, "%.*s", (int)(base - r->cgroup), r->cgroup);
	return cg_is_v2(parent) ? 0 : -1;
}

/* r's programs detached from its cgroup, those still loaded as recorded: how many. */
static int detach_recorded(const struct own_rec *r)
{
	int fd = open(r->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	if (fd < 0)
		return 0;
	for (int k = 0; k < r->nprogs; k++) {
		struct own_prog now;
		if (own_prog_now(r->prog[k].id, &now) != 0 || strcmp(now.tag, r->prog[k].tag) != 0 ||
		    now.load_time != r->prog[k].load_time)
			continue;
		struct st_bpf_get_id g = {.id = r->prog[k].id};
		int pfd = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &g, sizeof g);
		if (pfd < 0)
			continue;
		struct st_bpf_prog_attach a = {.target_fd = (uint32_t)fd, .attach_bpf_fd = (uint32_t)pfd,
		                               .attach_type = (uint32_t)r->prog[k].attach_type};
		n += cg_bpf(ST_BPF_PROG_DETACH, &a, sizeof a) == 0;
		close(pfd);
	}
	close(fd);
	return n;
}

/* Whether any of r's programs is still loaded as recorded. */
static int any_loaded(const struct own_rec *r)
{
	for (int k = 0; k < r->nprogs; k++) {
		struct own_prog now;
		if (own_prog_now(r->prog[k].id, &now) == 0 && strcmp(now.tag, r->prog[k].tag) == 0 &&
		    now.load_time == r->prog[k].load_time)
			return 1;
	}
	return 0;
}

void own_sweep(FILE *say, const char *who)
{
	struct own_rec *v;
	int lock = own_lock(), n = own_read_all(&v);
	for (int k = 0; k < n; k++) {
		const struct own_rec *r = &v[k];
		int run = strcmp(r->kind, "run") == 0;
		if (run && own_alive(r))
			continue;
		int at = where_is(r), loaded = any_loaded(r);
		if (at < 0)
			continue; /* (its cgroup is not seen from here: left for a run that sees it) */
		if (at == 0 || (!loaded && !(run && r->made))) {
			own_remove(r); /* (stale: its cgroup or its programs gone) */
			continue;
		}
		if (!run)
			continue; /* attach --cgroup's stay until socktune detach */
		if (own_populated(r->cgroup)) {
			if (!loaded)
				continue; /* (its cgroup, to remove once empty: nothing of ours runs) */
			fprintf(say, "socktune: %s: socktune --cgroup (pid %d) is gone; its programs stay "
			        "attached to %s, tuning the processes still there (socktune detach %s "
			        "removes them)\n", who, r->pid, r->cgroup, r->cgroup);
			continue;
		}
		int detached = detach_recorded(r), heir = -1;
		for (int j = 0; j < n && heir < 0; j++)
			if (j != k && strcmp(v[j].kind, "run") == 0 && v[j].cgroup_id == r->cgroup_id &&
			    own_alive(&v[j]))
				heir = j;
		if (heir >= 0 && r->made && !v[heir].made) { /* the last one out removes it */
			char err[300];
			v[heir].made = 1;
			own_write(&v[heir], err, sizeof err);
		}
		int removed = r->made && heir < 0 && own_rmtree(r->cgroup) == 0;
		if (removed || !r->made || heir >= 0)
			own_remove(r);
		fprintf(say, "socktune: %s: socktune --cgroup (pid %d) is gone and left %s empty: %d "
		        "program%s detached%s\n", who, r->pid, r->cgroup, detached, detached == 1 ? "" : "s",
		        !r->made ? "" : removed ? ", the cgroup removed"
		        : heir >= 0 ? ", the cgroup kept for another socktune --cgroup in it"
		                    : ", the cgroup could not be removed");
	}
	free(v);
	own_unlock(lock);
}

int own_query(int cgroup_fd, int attach_type, unsigned *ids, int max)
{
	struct st_bpf_query a = {.target_fd = (uint32_t)cgroup_fd, .attach_type = (uint32_t)attach_type,
	                         .prog_ids = (uintptr_t)ids, .prog_cnt = (uint32_t)max};
	if (cg_bpf(ST_BPF_PROG_QUERY, &a, sizeof a) != 0)
		return -1;
	return (int)a.prog_cnt;
}

int own_attach(int prog_fd, int attach_type, int cgroup_fd, unsigned replace_id)
{
	struct st_bpf_prog_attach a = {.target_fd = (uint32_t)cgroup_fd, .attach_bpf_fd = (uint32_t)prog_fd,
	                               .attach_type = (uint32_t)attach_type,
	                               .attach_flags = ST_BPF_F_ALLOW_MULTI};
	if (!replace_id)
		return (int)cg_bpf(ST_BPF_PROG_ATTACH, &a, sizeof a);
	/* (the kernel counts the programs before it looks for the one BPF_F_REPLACE names: at
	 * the limit, the old one must go first) */
	struct st_bpf_get_id g = {.id = replace_id};
	int old = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &g, sizeof g); /* (kept loaded meanwhile) */
	if (old < 0)
		return -1;
	struct st_bpf_prog_attach d = {.target_fd = (uint32_t)cgroup_fd, .attach_bpf_fd = (uint32_t)old,
	                               .attach_type = (uint32_t)attach_type};
	int r = (int)cg_bpf(ST_BPF_PROG_DETACH, &d, sizeof d), e = errno;
	if (r == 0 && (r = (int)cg_bpf(ST_BPF_PROG_ATTACH, &a, sizeof a)) != 0) {
		e = errno;
		a.attach_bpf_fd = (uint32_t)old; /* (put back) */
		cg_bpf(ST_BPF_PROG_ATTACH, &a, sizeof a);
	}
	close(old);
	errno = e;
	return r;
}

int own_detach(unsigned id, int attach_type, int cgroup_fd)
{
	struct st_bpf_get_id g = {.id = id};
	int fd = (int)cg_bpf(ST_BPF_PROG_GET_FD_BY_ID, &g, sizeof g);
	if (fd < 0)
		return -1;
	struct st_bpf_prog_attach a = {.target_fd = (uint32_t)cgroup_fd, .attach_bpf_fd = (uint32_t)fd,
	                               .attach_type = (uint32_t)attach_type};
	int r = (int)cg_bpf(ST_BPF_PROG_DETACH, &a, sizeof a), e = errno;
	close(fd);
	errno = e;
	return r;
}

int own_rec_fill(struct own_rec *r, const char *kind, const char *cgroup, unsigned long long cgroup_id,
                 int made, const int *fds, const int *types, int n)
{
	memset(r, 0, sizeof *r);
	snprintf(r->kind, sizeof r->kind, "%s", kind);
	r->pid = (int)getpid();
	r->start = own_start_of(0);
	r->cgroup_id = cgroup_id;
	r->made = made;
	snprintf(r->cgroup, sizeof r->cgroup, "%s", cgroup);
	for (int k = 0; k < n && r->nprogs < OWN_MAX_PROGS; k++) {
		if (fds[k] < 0)
			continue;
		if (prog_of_fd(fds[k], &r->prog[r->nprogs]) != 0)
			return -1;
		r->prog[r->nprogs++].attach_type = types[k];
	}
	return 0;
}
