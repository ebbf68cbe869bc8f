/* Programs exec'd in a way that loses the library.  A master that strips the environment
 * before exec (postfix's export_environment, systemd-socket-activate, env -i), or that
 * execs with a real uid other than its effective one (squid's SMP workers: the kernel then
 * sets AT_SECURE and the loader ignores LD_PRELOAD), runs its children untuned.  The
 * sockets they inherit keep what was set on them (the options live in the kernel's
 * socket), but nothing runs per connection and their own listeners are left as they are.
 * One warning per program says so.
 *
 * Runs only at exec, in the caller (a vfork() child included: it shares our memory, so it
 * touches nothing of ours but the shared memory of programs already named, which is what
 * it is for).  Everything the caller hands over is read through process_vm_readv(): a bad
 * pointer makes the exec fail with EFAULT, as without the library, never crash here.  The
 * stack use is under 4 KiB, the line included. */
#include <dlfcn.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "shim.h"

extern char **environ;

static int exec_watch;      /* the policy tunes something: losing it is worth a line */
static char self_path[256]; /* this library's file, as the loader mapped it */
static const char *self_base = "";

/* Programs already named: hashes of their paths, in memory shared with fork() children
 * (a prefork master's workers fork, then exec the same program: one line, not one per
 * worker).  Full (512 programs): the rest are not named. */
#define SEEN_SHARED (4096 / sizeof(uint64_t))
#define SEEN_LOCAL 64
static _Atomic uint64_t seen_local[SEEN_LOCAL];
static _Atomic uint64_t *named = seen_local;
static size_t seen_n = SEEN_LOCAL;

void st_exec_init(void)
{
	exec_watch = st_policy_tunes_listeners(&st_policy) || st_on(&st_policy, ST_V_CLIENT);
	if (!exec_watch)
		return;
	Dl_info info;
	if (dladdr((void *)st_exec_init, &info) && info.dli_fname &&
	    strlen(info.dli_fname) < sizeof self_path) {
		strcpy(self_path, info.dli_fname);
		const char *slash = strrchr(self_path, '/');
		self_base = slash ? slash + 1 : self_path;
	}
	void *m = mmap(NULL, SEEN_SHARED * sizeof(uint64_t), PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED) {
		named = m;
		seen_n = SEEN_SHARED;
	}
}

/* 1 when this is the first time key is claimed; 0 when it was (or the memory is full). */
static int claim(const char *key)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const unsigned char *c = (const unsigned char *)key; *c; c++)
		h = (h ^ *c) * 1099511628211ull;
	h |= 1;
	for (size_t i = 0; i < seen_n; i++) {
		_Atomic uint64_t *slot = &named[(h + i) % seen_n];
		uint64_t cur = atomic_load_explicit(slot, memory_order_relaxed);
		if (cur == h)
			return 0;
		if (cur == 0 && atomic_compare_exchange_strong(slot, &cur, h))
			return 1;
		if (cur == h) /* another thread or worker, just now */
			return 0;
	}
	return 0;
}

/* ---- reading what the caller handed over, never past a fault ---- */

/* Copy up to n (<= 4096) bytes at p from process pid's memory (ours, or a vfork child's,
 * which is ours); returns how many could be read (a read stops at the first page that is
 * not mapped).  Pieces are split at 4 KiB boundaries, which every page size respects.
 * (Memory we trust, the process's own environ, is read directly by the callers, and never
 * past the end of what it holds: a string's NUL, an array's NULL.) */
static size_t peek(pid_t pid, const void *p, void *out, size_t n)
{
	uintptr_t a = (uintptr_t)p;
	size_t first = 4096 - (a & 4095);
	struct iovec local[2] = {{out, n}, {0, 0}}, remote[2] = {{(void *)p, n}, {0, 0}};
	unsigned long cnt = 1;
	if (n > first) {
		local[0].iov_len = remote[0].iov_len = first;
		local[1] = (struct iovec){(char *)out + first, n - first};
		remote[1] = (struct iovec){(char *)p + first, n - first};
		cnt = 2;
	}
	ssize_t r = process_vm_readv(pid, local, cnt, remote, cnt, 0);
	return r > 0 ? (size_t)r : 0;
}

/* The string at s into out (n bytes, NUL-terminated, cut if longer).  Returns its length,
 * n - 1 if cut, or -1 when it cannot be read to its end or to n - 1 bytes. */
static long peek_str(pid_t pid, const char *s, char *out, size_t n)
{
	if (pid == 0) { /* the process's own environ */
		size_t len = strnlen(s, n - 1);
		memcpy(out, s, len);
		out[len] = '\0';
		return (long)len;
	}
	size_t got = 0;
	while (got + 1 < n) {
		uintptr_t a = (uintptr_t)(s + got);
		size_t want = 4096 - (a & 4095);
		if (want > n - 1 - got)
			want = n - 1 - got;
		size_t r = peek(pid, s + got, out + got, want);
		char *nul = memchr(out + got, '\0', r);
		if (nul)
			return nul - out;
		got += r;
		if (r < want)
			return -1;
	}
	out[got] = '\0';
	return (long)got;
}

/* ---- will the library be loaded, with a policy? ---- */

/* Whether an LD_PRELOAD-style list (entries split at spaces and colons, as the loader
 * does) names this library: by its path, its file name, or a name with libsocktune in it. */
static int names_us(const char *list)
{
	const char *p = list;
	while (*p) {
		size_t len = strcspn(p, " :\t\n");
		if (len) {
			const char *base = memrchr(p, '/', len);
			base = base ? base + 1 : p;
			size_t blen = len - (size_t)(base - p);
			if (memmem(p, len, "libsocktune", 11) ||
			    (self_path[0] && len == strlen(self_path) && !memcmp(p, self_path, len)) ||
			    (self_base[0] && blen == strlen(self_base) && !memcmp(base, self_base, blen)))
				return 1;
		}
		p += len;
		p += strspn(p, " :\t\n");
	}
	return 0;
}

/* /etc/ld.so.preload names this library: every exec loads it, whatever the environment.
 * Read once, with raw calls (read() is a hook). */
static _Atomic int preload_file; /* 0 not read yet, 1 names us, 2 does not */

static int system_preload(void)
{
	int v = atomic_load_explicit(&preload_file, memory_order_relaxed);
	if (v)
		return v == 1;
	char buf[1024];
	long n = 0;
	long fd = syscall(SYS_openat, AT_FDCWD, "/etc/ld.so.preload", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = syscall(SYS_read, fd, buf, sizeof buf - 1);
		syscall(SYS_close, fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	v = names_us(buf) ? 1 : 2;
	atomic_store_explicit(&preload_file, v, memory_order_relaxed);
	return v == 1;
}

/* The variable an environment entry sets, if it tunes (or switches the library off),
 * else -1: a SOCKTUNE_LOG left alone keeps no policy. */
static int tuning_var(pid_t pid, const char *entry)
{
	char name[64], err[8];
	long long on = 0;
	if (peek_str(pid, entry, name, sizeof name) < 0)
		return -1;
	char *eq = strchr(name, '=');
	if (!eq)
		return -1;
	*eq = '\0';
	int id = st_var_by_env(name);
	if (id < 0 || (id == ST_V_DISABLE && (st_parse_bool(eq + 1, &on, err, sizeof err) || !on)))
		return -1;
	return id == ST_V_DISABLE || id == ST_V_CLIENT || st_var_tunes_listeners((enum st_var_id)id)
	               ? id
	               : -1;
}

enum { ENV_KEPT, ENV_NO_PRELOAD, ENV_PRELOAD_OTHER, ENV_NO_POLICY, ENV_UNREADABLE };

/* What envp (NULL: empty, as the kernel takes it) does to the library in the new program.
 * With several LD_PRELOAD entries the loader takes the last. */
static int env_state(pid_t pid, char *const envp[])
{
	int preload = -1, policy = 0;
	/* 16 entries at a time: their pointers, then the first bytes of each in one call */
	enum { BATCH = 16, HEAD = 16 };
	char *ptrs[BATCH];
	char heads[BATCH][HEAD];
	struct iovec lv[BATCH], rv[BATCH];
	for (size_t i = 0, got; envp; i += got) {
		if (i >= 65536)
			return ENV_UNREADABLE;
		if (pid == 0) /* our own environ: never past its NULL */
			for (got = 0; got < BATCH && (ptrs[got] = envp[i + got]) != NULL;)
				got++;
		else
			got = peek(pid, envp + i, ptrs, sizeof ptrs) / sizeof ptrs[0];
		if (pid == 0 && got < BATCH)
			got++; /* the NULL itself ends the walk below */
		if (got == 0)
			return ENV_UNREADABLE;
		size_t m = 0, want = 0;
		for (; m < got && ptrs[m]; m++) {
			/* never past the page the string starts in: a short string at the end of
			 * a mapping reads as it is */
			size_t len = 4096 - ((uintptr_t)ptrs[m] & 4095);
			if (len > HEAD - 1)
				len = HEAD - 1;
			memset(heads[m], 0, HEAD);
			lv[m] = (struct iovec){heads[m], len};
			rv[m] = (struct iovec){ptrs[m], len};
			want += len;
		}
		if (pid == 0) /* never past a string's NUL */
			for (size_t k = 0; k < m; k++)
				memcpy(lv[k].iov_base, rv[k].iov_base, strnlen(rv[k].iov_base, lv[k].iov_len));
		else if (m && process_vm_readv(pid, lv, m, rv, m, 0) != (ssize_t)want)
			return ENV_UNREADABLE; /* the exec fails with EFAULT */
		for (size_t k = 0; k < m; k++) {
			const char *head = heads[k];
			if (!strncmp(head, "SOCKTUNE_", 9)) {
				int id = tuning_var(pid, ptrs[k]);
				if (id == ST_V_DISABLE)
					return ENV_KEPT; /* switched off on purpose */
				policy |= id >= 0;
			} else if (!strncmp(head, "LD_PRELOAD=", 11)) {
				char list[512];
				long len = peek_str(pid, ptrs[k] + 11, list, sizeof list);
				if (len < 0)
					return ENV_UNREADABLE;
				/* a list longer than we read, without us in its start: do not guess */
				preload = names_us(list) || len == (long)sizeof list - 1;
			}
		}
		if (m < got)
			goto done; /* the NULL that ends envp */
		if (got < sizeof ptrs / sizeof ptrs[0] && ((uintptr_t)(envp + i + got) & 4095))
			return ENV_UNREADABLE; /* stopped short of a page end: unreadable */
	}
done:
	if (preload != 1 && !system_preload())
		return preload < 0 ? ENV_NO_PRELOAD : ENV_PRELOAD_OTHER;
	return policy ? ENV_KEPT : ENV_NO_POLICY;
}

/* ---- will the exec be secure (AT_SECURE)? ---- */

/* The kernel's rule (commoncap's bprm_creds_from_file): secure when the new effective
 * uid differs from the real uid, or the new effective gid from the real gid, or a
 * non-root user gains capabilities from the file.  A setuid bit counts unless the file
 * system is mounted nosuid or the file is a script (Linux ignores it there).  path names
 * the file for the calls that take a path. */
static int secure_exec(const struct stat *st, const char *path, int resetids, char *detail,
                       size_t n)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;
	if (getresuid(&r, &e, &s) != 0 || getresgid(&rg, &eg, &sg) != 0)
		return 0;
	if (resetids) { /* posix_spawn's child drops to the real ids before it execs */
		e = r;
		eg = rg;
	}
	uid_t ne = e;
	gid_t neg = eg;
	int suid = st->st_mode & S_ISUID, sgid = (st->st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP);
	struct statvfs vfs;
	/* under no_new_privs (systemd's NoNewPrivileges=) the kernel ignores setuid and setgid
	 * bits and file capabilities: only the process's own ids count */
	int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;
	if ((suid || sgid) && (nnp || (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))))
		suid = sgid = 0;
	if (suid || sgid) {
		char magic[2] = {0, 0};
		long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0) {
			if (syscall(SYS_read, fd, magic, 2) != 2)
				magic[0] = 0;
			syscall(SYS_close, fd);
		}
		if (magic[0] == '#' && magic[1] == '!')
			suid = sgid = 0;
	}
	if (suid)
		ne = st->st_uid;
	if (sgid)
		neg = st->st_gid;
	if (ne != r) {
		if (suid && ne != e)
			snprintf(detail, n, "setuid file: effective uid %ld, real uid %ld", (long)ne, (long)r);
		else
			snprintf(detail, n, "the process runs with uid %ld, euid %ld", (long)r, (long)e);
		return 1;
	}
	if (neg != rg) {
		if (sgid && neg != eg)
			snprintf(detail, n, "setgid file: effective gid %ld, real gid %ld", (long)neg, (long)rg);
		else
			snprintf(detail, n, "the process runs with gid %ld, egid %ld", (long)rg, (long)eg);
		return 1;
	}
	if (r != 0 && !nnp && getxattr(path, "security.capability", NULL, 0) > 0 &&
	    !(statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))) {
		snprintf(detail, n, "file capabilities (security.capability), real uid %ld", (long)r);
		return 1;
	}
	return 0;
}

/* ---- which file ---- */

/* The program an execvp()-style call runs: file itself when it has a slash, else the first
 * executable regular file of that name along the caller's PATH (glibc's default when PATH
 * is unset).  Returns 0 with its path in out and its stat in st. */
static int search_path(const char *file, char *out, size_t n, struct stat *st)
{
	if (strchr(file, '/')) {
		snprintf(out, n, "%s", file);
		return stat(out, st) == 0 ? 0 : -1;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	size_t flen = strlen(file);
	for (const char *p = path;; p++) {
		size_t dlen = strcspn(p, ":");
		if (dlen + 1 + flen < n) {
			if (dlen) {
				memcpy(out, p, dlen);
				out[dlen] = '/';
				memcpy(out + dlen + 1, file, flen + 1);
			} else {
				memcpy(out, file, flen + 1); /* an empty entry: the current directory */
			}
			if (stat(out, st) == 0 && S_ISREG(st->st_mode) && (st->st_mode & 0111))
				return 0;
		}
		p += dlen;
		if (!*p)
			return -1;
	}
}

/* What descriptor fd names, for the line ("/proc/self/fd/N" when that cannot be read). */
static void fd_name(int fd, char *out, size_t n)
{
	char link[32];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	long len = syscall(SYS_readlinkat, AT_FDCWD, link, out, n - 1);
	if (len <= 0)
		snprintf(out, n, "%s", link);
	else
		out[len] = '\0';
}

/* How many TCP listeners the new program inherits: descriptors without close-on-exec
 * that listen (a dup2() onto 3 for socket activation included).  One pass over
 * /proc/self/fd, made only when a line is written. */
static void count_tcp_inherited(int fd, const struct stat *st, int listening, void *ctx)
{
	(void)st;
	if (!listening)
		return;
	int proto = 0, fl = fcntl(fd, F_GETFD);
	socklen_t l = sizeof proto;
	if (fl >= 0 && !(fl & FD_CLOEXEC) &&
	    st_real.getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) == 0 &&
	    (proto == IPPROTO_TCP || proto == IPPROTO_MPTCP))
		(*(int *)ctx)++;
}

static int inherited_listeners(void)
{
	int count = 0;
	return st_each_socket_fd(count_tcp_inherited, &count) == 0 ? count : -1;
}

void st_exec_check(const char *call, int dirfd, const char *file, int flags, int search,
                   char *const envp[], int resetids)
{
	if (!exec_watch)
		return;
	int saved = errno;
	char name[384], prog[512], at[32], detail[128];
	struct stat st;
	/* the file, found as the kernel (or execvp's search) will find it, and a path to it
	 * for the calls that take one; a file that is not there: the exec fails, no line.
	 * The kernel reads the name for the first call that takes it (fstatat, faccessat):
	 * once that did not say EFAULT, the name is readable up to its end or PATH_MAX. */
	if (!file)
		goto out;
	if (!search) {
		int at_flags = (flags & AT_SYMLINK_NOFOLLOW) | (flags & AT_EMPTY_PATH);
		/* the raw call: musl's fstatat() reads the name itself with AT_EMPTY_PATH, where the
		 * kernel answers EFAULT for a bad pointer */
#ifdef SYS_newfstatat
		if (syscall(SYS_newfstatat, dirfd, file, &st, at_flags) != 0)
#else
		if (fstatat(dirfd, file, &st, at_flags) != 0)
#endif
			goto out;
	} else if (syscall(SYS_faccessat, AT_FDCWD, file, F_OK) != 0 && errno == EFAULT) {
		goto out;
	}
	size_t len = strnlen(file, sizeof name);
	if (len == sizeof name)
		goto out; /* longer than we keep: not named */
	memcpy(name, file, len + 1);
	if (search) {
		if (!name[0] || search_path(name, prog, sizeof prog, &st) != 0)
			goto out;
		at[0] = '\0';
	} else if (!name[0]) { /* fexecve, execveat(fd, "", ..., AT_EMPTY_PATH) */
		fd_name(dirfd, prog, sizeof prog);
		snprintf(at, sizeof at, "/proc/self/fd/%d", dirfd);
	} else if (dirfd != AT_FDCWD && name[0] != '/') {
		fd_name(dirfd, prog, sizeof prog);
		size_t dl = strlen(prog);
		snprintf(prog + dl, sizeof prog - dl, "/%s", name);
		snprintf(at, sizeof at, "/proc/self/fd/%d/", dirfd);
	} else {
		snprintf(prog, sizeof prog, "%s", name);
		at[0] = '\0';
	}
	if (!S_ISREG(st.st_mode))
		goto out;

	/* a path for statvfs/getxattr/open: the file itself, or through /proc for a descriptor */
	char at_name[sizeof at + sizeof name];
	snprintf(at_name, sizeof at_name, "%s%s", at, name);
	const char *path = search ? prog : at_name;

	const char *reason;
	if (secure_exec(&st, path, resetids, detail, sizeof detail)) {
		reason = "secure-exec";
	} else {
		/* environ is ours, read as it is (libc's getenv() does); an envp the caller
		 * made is read through process_vm_readv */
		switch (env_state(envp == environ ? 0 : getpid(), envp)) {
		case ENV_NO_PRELOAD:
			snprintf(detail, sizeof detail, "no LD_PRELOAD in the new environment");
			break;
		case ENV_PRELOAD_OTHER:
			snprintf(detail, sizeof detail, "LD_PRELOAD without libsocktune in the new environment");
			break;
		case ENV_NO_POLICY:
			snprintf(detail, sizeof detail,
			         "no SOCKTUNE_ variable that tunes in the new environment");
			break;
		default: /* kept, or an environment the exec will refuse (EFAULT) */
			goto out;
		}
		reason = "env-stripped";
	}
	/* a file the exec will refuse (not executable for us, EACCES) runs nothing: it must not
	 * use up the program's one line */
	if (ST_LOG_WARN > st_log_level || faccessat(AT_FDCWD, prog, X_OK, AT_EACCESS) != 0 ||
	    !claim(prog))
		goto out;
	st_sanitize(prog, prog, sizeof prog);
	/* What still holds is what the kernel keeps on the sockets it inherits; with none
	 * (squid's coordinator opens the listener itself, after its exec), nothing does. */
	int listeners = inherited_listeners();
	const char *kept = listeners > 0 ? "listener options on inherited sockets"
	                 : listeners == 0 ? "nothing: it inherits no listener"
	                                  : "listener options on inherited sockets, if any";
#define EXEC_LINE                                                                            \
	"event=exec-untuned call=%s program=\"%s\" reason=%s detail=\"%s\"%s kept=\"%s\" "     \
	"lost=\"per-connection work (quick-ack re-arm, SO_PRIORITY), new listeners\""
	char held[40] = ""; /* unknown: null, left out */
	if (listeners >= 0)
		snprintf(held, sizeof held, " inherited_listeners=%d", listeners);
	if (st_in_vfork_child())
		st_log_line_borrowed(ST_LOG_WARN, EXEC_LINE, call, prog, reason, detail, held, kept);
	else
		st_log_line(ST_LOG_WARN, EXEC_LINE, call, prog, reason, detail, held, kept);
#undef EXEC_LINE
out:
	errno = saved;
}
