# socktune: make (library + command), make test, make demo, make bench, make install.
-include config.mak

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
# Where make install puts libsocktune.so (the Debian package: /usr/lib/<multiarch>/socktune);
# under PREFIX, since the command finds it from its own directory, PREFIX/bin.
LIBDIR  ?= $(PREFIX)/lib
MANDIR  ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# The version, in one place (include/socktune.h); debian/changelog must agree (make deb,
# t_version).
VERSION := $(shell sed -n 's/^\#define ST_VERSION "\(.*\)"/\1/p' include/socktune.h)

WARN    := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wformat=2 \
           -Wno-format-nonliteral
CFLAGS  ?= -O2 -g
CPPFLAGS ?=
ST_CFLAGS := -std=gnu11 $(WARN) -fno-common -fstack-protector-strong \
             -D_FORTIFY_SOURCE=2 -D_GNU_SOURCE -Iinclude -Ishim -Icommon $(CPPFLAGS) $(CFLAGS)
ifeq ($(CI),true)
ST_CFLAGS += -Werror
endif
ifneq ($(WERROR),)
ST_CFLAGS += -Werror
endif
LDFLAGS ?=
# -z defs: an object left out of the link (a copy of the tree without common/) fails here, not
# at run time with "undefined symbol".
SHLIB_LDFLAGS := -shared -Wl,-z,defs -Wl,-z,relro,-z,now -Wl,--version-script=shim/libsocktune.map
LIBS    := -ldl -lpthread

# common/: what the library and the command share (policy, option table, host limits).
# shim/: the library (hooks and what they do).  cli/: the command: the dispatcher and what
# several subcommands share at its top, cli/host/ the host view they read (sock_diag, /proc,
# namespaces, holders), cli/findings/ doctor's rules, one folder per subcommand.
COMMON_SRC := $(wildcard common/*.c)
LIB_SRC    := $(wildcard shim/*.c) $(filter-out common/json.c,$(COMMON_SRC)) # (JSON: the command only)
LIB_OBJ    := $(patsubst %.c,$(BUILD)/lib/%.o,$(LIB_SRC))
HDRS       := $(wildcard include/*.h common/*.h shim/*.h cli/*.h cli/*/*.h)

LIB := $(BUILD)/libsocktune.so

# The command links the parser and the host reader, never the hooks.  One -Icli: an include
# line names the header's folder ("host/diag.h", "check/check.h"; the top's as "cli.h"), so it
# tells which layer a name comes from (t_layout holds the layers to it).
CLI_INC    := -Icli
CLI_SRC    := $(wildcard cli/*.c cli/*/*.c) $(COMMON_SRC)
CLI        := $(BUILD)/socktune
CLI_STATIC := $(BUILD)/socktune-static
MAN1       := $(wildcard docs/*.1)
MAN7       := $(wildcard docs/*.7)

UNIT_SRC   := $(wildcard tests/unit/*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)
HELPER_SRC := $(wildcard tests/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/tests/bin/%)

.PHONY: all static test test-bins demo bench bench-quick bench-bins clean install uninstall deb FORCE
all: $(LIB) $(CLI)

$(BUILD)/lib/%.o: %.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(ST_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(LIB): $(LIB_OBJ) shim/libsocktune.map
	$(CC) $(ST_CFLAGS) $(SHLIB_LDFLAGS) $(LDFLAGS) -o $@ $(LIB_OBJ) $(LIBS)

# The library directory as the command sees it from PREFIX/bin; the stamp changes (and the
# command is rebuilt) when LIBDIR does.
ifeq ($(filter $(PREFIX)/%,$(LIBDIR)),)
$(error LIBDIR=$(LIBDIR) must be under PREFIX=$(PREFIX): the command finds the library from $(PREFIX)/bin)
endif
LIBDIR_FROM_BIN := ../$(patsubst $(PREFIX)/%,%,$(LIBDIR))
$(BUILD)/libdir.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(LIBDIR_FROM_BIN)' | cmp -s - $@ || echo '$(LIBDIR_FROM_BIN)' >$@

$(CLI): $(CLI_SRC) $(HDRS) $(BUILD)/libdir.stamp
	@mkdir -p $(@D)
	$(CC) $(ST_CFLAGS) $(CLI_INC) -DST_LIBDIR_FROM_BIN='"$(LIBDIR_FROM_BIN)"' -Wl,-z,relro,-z,now \
		$(LDFLAGS) -o $@ $(CLI_SRC)

# For images without a libc of their own (FROM scratch + a static server is out of reach
# of LD_PRELOAD anyway, but a distroless image with a dynamic server has no shell either).
static: $(CLI_STATIC)
$(CLI_STATIC): $(CLI_SRC) $(HDRS) $(BUILD)/libdir.stamp
	@mkdir -p $(@D)
	$(CC) $(filter-out -fsanitize=%,$(ST_CFLAGS)) $(CLI_INC) \
		-DST_LIBDIR_FROM_BIN='"$(LIBDIR_FROM_BIN)"' -static $(LDFLAGS) -o $@ $(CLI_SRC)

# Unit tests link the pure parts directly: no preload involved.
$(BUILD)/tests/unit/%: tests/unit/%.c $(COMMON_SRC) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(ST_CFLAGS) $(CLI_INC) -o $@ $< $(COMMON_SRC)
# st_sanitize's test includes log.c whole (it needs none of the library's other parts).
$(BUILD)/tests/unit/test_sanitize: shim/log.c
# test_findings, test_findings_rules and test_findings_path include doctor's rules and their
# table, how their fixes are written, its sock_diag reader, holders.c and the record its
# evidence is written in whole; the first two by one harness.
FINDINGS_UNIT_SRC := cli/findings/findings.c cli/findings/findings_queue.c \
                     cli/findings/findings_memory.c cli/findings/findings_path.c \
                     cli/findings/closed.c cli/findings/rules.c cli/findings/fixes.c \
                     cli/host/diag.c cli/host/holders.c cli/host/grow.c cli/host/pidinfo.c \
                     cli/record.c
$(BUILD)/tests/unit/test_findings $(BUILD)/tests/unit/test_findings_rules \
$(BUILD)/tests/unit/test_findings_path: $(FINDINGS_UNIT_SRC)
$(BUILD)/tests/unit/test_findings $(BUILD)/tests/unit/test_findings_rules: \
	tests/unit/findings_harness.h
# test_diagclose includes the destroy notifications' reader and the sock_diag parser whole.
$(BUILD)/tests/unit/test_diagclose: cli/host/diagclose.c cli/host/diag.c cli/host/pidinfo.c

# test_outcome includes the record layer, whose outcome writer it compares with the library's.
$(BUILD)/tests/unit/test_outcome: cli/record.c

# test_watchid includes watch's service names, holders.c for comm_of and pidinfo.c for the
# cgroup reader.
$(BUILD)/tests/unit/test_watchid: cli/watch/watchid.c cli/host/holders.c cli/host/grow.c \
                                  cli/host/pidinfo.c
# test_pidinfo includes the /proc/PID/cgroup reader and the namespace test whole.
$(BUILD)/tests/unit/test_pidinfo: cli/host/pidinfo.c

# test_service includes what a service is made of, and the sock_diag and holder readers, whole.
$(BUILD)/tests/unit/test_service: cli/host/service.c cli/host/svcsets.c cli/host/diag.c \
                                  cli/host/holders.c cli/host/grow.c cli/host/pidinfo.c

# test_btf includes the BTF reader whole.
$(BUILD)/tests/unit/test_btf: cli/host/btf.c

# Test servers and clients: plain programs that know nothing of socktune (but the two that
# read the host as the command does: HELPER_INC).
$(BUILD)/tests/bin/%: tests/helpers/%.c tests/helpers/common.h
	@mkdir -p $(@D)
	$(CC) $(ST_CFLAGS) -Itests/helpers $(HELPER_INC) -o $@ $< -lpthread

$(BUILD)/tests/bin/common: ;
# pathemu: its command line, and its namespaces, devices and cleaner, in headers of their own.
$(BUILD)/tests/bin/pathemu: tests/helpers/pathemu_args.h tests/helpers/pathemu_ns.h

# iterprobe includes the BPF iterator path whole, and the sock_diag reader; bpfq the bpf(2)
# ABI as the command writes it.
$(BUILD)/tests/bin/iterprobe: cli/host/bpfiter.c cli/host/bpfiterprog.c cli/host/btf.c \
                              cli/host/bpfcall.c cli/host/diag.c cli/host/pidinfo.c \
                              common/host.c $(HDRS)
$(BUILD)/tests/bin/iterprobe $(BUILD)/tests/bin/bpfq: HELPER_INC := $(CLI_INC)
$(BUILD)/tests/bin/bpfq: cli/host/bpf_abi.h

# A statically linked test server: out of LD_PRELOAD's reach, tuned by attach from outside.
$(BUILD)/tests/bin/tserver-static: tests/helpers/tserver.c tests/helpers/common.h
	@mkdir -p $(@D)
	$(CC) $(filter-out -fsanitize=%,$(ST_CFLAGS)) -Itests/helpers -static -o $@ $< -lpthread

# A Go net/http server (Go makes its own system calls: no preload reaches it), for t_attach
# and t_cgroup, built once here where Go is installed (.ci/run installs golang-go; the tests
# skip without it), its cache and GOPATH in the build directory (no HOME needed).
GO ?= go
$(BUILD)/tests/bin/gohttp: tests/go/httpserver.go
	@mkdir -p $(@D)
	@if command -v $(GO) >/dev/null 2>&1; then \
		echo "$(GO) build -o $@ $<"; \
		GOCACHE=$(abspath $(BUILD))/go-cache GOPATH=$(abspath $(BUILD))/go-path \
			GO111MODULE=off GOFLAGS= $(GO) build -o $@ $<; \
	else echo "($@ not built: no $(GO) here)"; fi

# t_nodelay_stall runs the benchmark's publish/acknowledge pair, t_path_initcwnd its path pair.
test-bins: $(LIB) $(CLI) $(CLI_STATIC) $(UNIT_BIN) $(filter-out $(BUILD)/tests/bin/common,$(HELPER_BIN)) \
           $(BUILD)/tests/bin/tserver-static $(BUILD)/tests/bin/gohttp \
           $(BUILD)/bench/bsrv $(BUILD)/bench/bcli $(BUILD)/bench/psrv $(BUILD)/bench/pcli

# make test builds what the tests need a job per core (unless make was given -j itself: its
# jobs then), then runs the test files side by side (tests/run.sh, JOBS of them).
test:
	@$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1)) test-bins
	@BUILD=$(BUILD) CC="$(CC)" sh tests/run.sh

demo: $(LIB) $(CLI) $(BUILD)/tests/bin/kaclient
	@BUILD=$(BUILD) sh examples/demo.sh

# The benchmark: its own programs in bench/, plus the test helpers tserver and pathemu.
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

$(BUILD)/bench/%: bench/%.c bench/bench.h
	@mkdir -p $(@D)
	$(CC) $(ST_CFLAGS) -Ibench -o $@ $< -lm -lpthread

bench-bins: $(LIB) $(CLI) $(BENCH_BIN) $(BUILD)/tests/bin/tserver $(BUILD)/tests/bin/pathemu

bench: bench-bins
	@BUILD=$(BUILD) sh bench/run.sh

bench-quick: bench-bins
	@BUILD=$(BUILD) BENCH_QUICK=1 sh bench/run.sh

clean:
	rm -rf $(BUILD)

# The command finds the library at LIBDIR (../lib) from its own directory, PREFIX/bin.
install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(BASHCOMPDIR)
	install -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/libsocktune.so
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/socktune
	install -m 0644 completion/socktune.bash $(DESTDIR)$(BASHCOMPDIR)/socktune
	$(if $(MAN1),install -d $(DESTDIR)$(MANDIR)/man1)
	$(if $(MAN1),install -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/)
	$(if $(MAN7),install -d $(DESTDIR)$(MANDIR)/man7)
	$(if $(MAN7),install -m 0644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/)

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libsocktune.so $(DESTDIR)$(PREFIX)/bin/socktune
	rm -f $(DESTDIR)$(BASHCOMPDIR)/socktune
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(MAN7)))

# The Debian package (debian/), built from a copy of the tree in DEBDIR, where
# dpkg-buildpackage leaves it (it writes to the parent of the tree it builds):
# DEBDIR/socktune_VERSION_ARCH.deb.  Needs dpkg-dev and debhelper.
DEBDIR ?= $(BUILD)/deb
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
		{ echo "make deb: needs dpkg-buildpackage and dh (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version); [ "$$v" = "$(VERSION)" ] || \
		{ echo "make deb: debian/changelog says $$v, include/socktune.h $(VERSION)" >&2; exit 1; }
	rm -rf $(DEBDIR)
	mkdir -p $(DEBDIR)/socktune-$(VERSION)
	tar -cf - --exclude=./.git --exclude='./build*' --exclude=./config.mak --exclude='./$(BUILD)' . | \
		tar -C $(DEBDIR)/socktune-$(VERSION) -xf -
	cd $(DEBDIR)/socktune-$(VERSION) && dpkg-buildpackage -us -uc -b
	rm -rf $(DEBDIR)/socktune-$(VERSION)
	@echo "make deb: $$(ls $(DEBDIR)/*.deb)"

# ---- hardening (docs/hardening.md): each its own build directory ----
# make sanitize: the whole suite once, with the library, the command and the test helpers
# built with AddressSanitizer and UndefinedBehaviorSanitizer together; reports go to files
# under build-san/sanitizer, and any report fails the target.  make tsan: the threaded and
# forking tests.  make valgrind: the suite with the C servers under memcheck.  make fuzz:
# libFuzzer targets for every parser (clang), FUZZ_SECONDS in total.
SAN_CC      ?= gcc
FUZZ_CC     ?= clang
FUZZ_SECONDS ?= 60
SAN_FLAGS   := -O1 -g -fno-omit-frame-pointer
SAN_CHECK    = sh tests/sanitizer-check.sh

sanitize:
	rm -rf build-san/sanitizer && mkdir -p build-san/sanitizer
	$(MAKE) --no-print-directory BUILD=build-san CC=$(SAN_CC) \
		CFLAGS="$(SAN_FLAGS) -fsanitize=address,undefined" test-bins
	ST_SANITIZER=address,undefined ST_SANITIZER_PRELOAD=$$($(SAN_CC) -print-file-name=libasan.so) \
	ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:log_path=$(CURDIR)/build-san/sanitizer/asan \
	UBSAN_OPTIONS=print_stacktrace=1:log_path=$(CURDIR)/build-san/sanitizer/ubsan \
		BUILD=build-san sh tests/run.sh; r=$$?; $(SAN_CHECK) build-san/sanitizer && exit $$r

TSAN_TESTS ?= t_stress t_process t_log_hostile t_stats_hostile t_fdreuse t_handoff t_relisten t_dupfd t_listener_swap t_listener_closes
tsan:
	rm -rf build-tsan/sanitizer && mkdir -p build-tsan/sanitizer
	$(MAKE) --no-print-directory BUILD=build-tsan CC=$(SAN_CC) \
		CFLAGS="$(SAN_FLAGS) -fsanitize=thread" test-bins
	ST_SANITIZER=thread ST_SANITIZER_PRELOAD=$$($(SAN_CC) -print-file-name=libtsan.so) \
	ST_STRESS_CONNS=3000 \
	TSAN_OPTIONS=log_path=$(CURDIR)/build-tsan/sanitizer/tsan TESTS="$(TSAN_TESTS)" \
		BUILD=build-tsan sh tests/run.sh; r=$$?; $(SAN_CHECK) build-tsan/sanitizer && exit $$r

VG_SERVERS := tserver mtserver passthru fdops
valgrind:
	$(MAKE) --no-print-directory BUILD=build-vg test-bins
	rm -rf build-vg/valgrind build-vg/tests/vgbin && mkdir -p build-vg/valgrind build-vg/tests/vgbin
	for f in build-vg/tests/bin/*; do \
		n=$${f##*/}; w=build-vg/tests/vgbin/$$n; \
		case " $(VG_SERVERS) " in \
		*" $$n "*) printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --log-file=%s.%%p %s "$$@"\n' \
			"$(CURDIR)/build-vg/valgrind/$$n" "$(CURDIR)/$$f" >$$w && chmod +x $$w ;; \
		*) ln -s "$(CURDIR)/$$f" $$w ;; esac; \
	done
	ST_SANITIZER=valgrind ST_BIN=$(CURDIR)/build-vg/tests/vgbin ST_STRESS_CONNS=600 \
		BUILD=build-vg sh tests/run.sh; \
	r=$$?; $(SAN_CHECK) build-vg/valgrind && exit $$r

FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
# Each target links common/; fuzz_cli also the command's option parser, its target reader and
# --via's (with the record layer it writes to),
# as the command does.
build-fuzz/fuzz_cli: cli/args.c cli/usage.c cli/target.c cli/via.c cli/record.c
# fuzz_journal: the journal's line reader, and the record layer that writes the lines
build-fuzz/fuzz_journal: cli/journal.c cli/record.c
build-fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(COMMON_SRC) $(HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -g -O1 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Ishim -Icommon $(CLI_INC) \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -o $@ $(filter %.c,$^)

fuzz-bins: $(FUZZ_BIN)
fuzz: fuzz-bins
	FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh $(FUZZ_BIN)

.PHONY: sanitize tsan valgrind fuzz fuzz-bins
