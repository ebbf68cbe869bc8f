/* The one-time init that the constructor and every hook may trigger: resolve the real
 * functions (the rows of ST_HOOKS, hooks.h), read the policy, start the log and adopt the
 * listeners inherited at exec.  Below the hooks: it knows none of them. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "socktune_opts.h"
#include "shim.h"


extern char **environ;

static void die(const char *name, const char *why)
{
	char msg[160];
	int n = snprintf(msg, sizeof msg, "socktune: fatal: %s: %s\n", name, why);
	ssize_t w = write(STDERR_FILENO, msg, n > 0 ? (size_t)n : 0);
	(void)w;
	abort();
}

/* The next definition after ours, libc's.  A function of this very object (our own hook)
 * would mean endless recursion (proxychains-ng's load_sym makes the same check); the object
 * is told by its base address, so this file need not know the hooks. */
static void *load_sym(const char *name, int optional)
{
	void *sym = dlsym(RTLD_NEXT, name);
	Dl_info self, found;
	if (sym && dladdr((void *)load_sym, &self) && dladdr(sym, &found) &&
	    found.dli_fbase == self.dli_fbase)
		die(name, "dlsym(RTLD_NEXT) returned the hook itself");
	if (!sym && !optional)
		die(name, "not found in the libraries after libsocktune");
	return sym;
}

static void on_config_error(void *ctx, const char *name, const char *value, const char *msg)
{
	(void)ctx;
	st_log_defer(name, value, msg);
}

static void init_once(void)
{
	/* One pointer store each: a signal handler on this thread sees either the raw
	 * fallback (shim/raw.c) or libc's function, both right.  An optional symbol libc lacks
	 * keeps its fallback. */
#define LOAD(name, symbol, kind, ret, params)                                              \
	ST_IF_REAL(kind, do {                                                               \
		void *sym_ = load_sym(#symbol, ST_OPTIONAL_##kind);                         \
		if (sym_)                                                                   \
			st_real.name = (__typeof__(st_real.name))sym_;                      \
	} while (0);)
	ST_HOOKS(LOAD)
#undef LOAD

	/* A setuid or file-capability program: the loader should have dropped LD_PRELOAD; if we
	 * are here all the same, do nothing and trust no variable. */
	if (getauxval(AT_SECURE))
		return;
	st_policy_from_env(&st_policy, environ, on_config_error, NULL);
	/* what only a cgroup sock_ops program sets (the initial window, ...) the library
	 * cannot: said once, as a value it ignores; the rest of the policy applies */
	for (int i = 0; i < ST_V_COUNT; i++)
		if (st_cgroup_only(i) && st_has(&st_policy, (enum st_var_id)i))
			st_log_defer(st_vars[i].env, getenv(st_vars[i].env),
			             "only a cgroup sock_ops program sets it: run the program under "
			             "socktune --cgroup");
	if (st_on(&st_policy, ST_V_DISABLE))
		return;
	st_log_init(&st_policy);
	st_pid_init();
	st_enabled = 1;
	st_exec_init();
	st_adopt_inherited();
}

/* Init runs once, on the first thread that gets here.  That thread may re-enter a hook
 * before init is over (a signal handler that calls close(), an allocator that reads a file
 * while dlsym runs): such a call passes straight through to the fallbacks in st_real, where
 * waiting for init would wait for itself.  Other threads wait for init, a bounded time. */
/* Who runs init: its pid and tid in one word, 0 before.  A fork() child of a process whose
 * init was under way finds another pid there: the thread running it does not exist in the
 * child, so the child takes init over (every store init makes is idempotent). */
static _Atomic uint64_t init_owner;
static _Atomic int init_wait_over; /* a wait for another thread's init timed out once */

int st_init(void)
{
	int saved = errno; /* the first hooked call's errno is the app's */
	uint64_t pid = (uint64_t)getpid();
	uint64_t me = pid << 32 | (uint32_t)syscall(SYS_gettid), expect = 0;
	int live = 0, mine = atomic_compare_exchange_strong(&init_owner, &expect, me);
	for (int i = 0; !mine && i < 4 && expect && expect >> 32 != pid; i++)
		mine = atomic_compare_exchange_strong(&init_owner, &expect, me);
	if (mine) {
		init_once();
		atomic_store_explicit(&st_ready, 1, memory_order_release);
		live = st_enabled;
	} else if (expect != me) { /* another thread of ours runs init: wait, a bounded time */
		for (int i = 0; i < 100000 && !atomic_load(&init_wait_over) &&
		                !atomic_load_explicit(&st_ready, memory_order_acquire);
		     i++)
			sched_yield();
		if (atomic_load_explicit(&st_ready, memory_order_acquire))
			live = st_enabled;
		else
			atomic_store(&init_wait_over, 1); /* later calls pass through at once */
	}
	errno = saved;
	return live;
}

__attribute__((constructor)) static void st_constructor(void)
{
	st_init();
}

