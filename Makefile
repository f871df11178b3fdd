# SPDX-License-Identifier: MIT
#
# make            build build/nccltrace and the demo job
# make static     build build/nccltrace-static (libbpf, libelf, libz, libzstd, jansson linked in)
# make bundle     build build/nccltrace-bundle: the full nccltrace with its own loader and libraries
# make test       unit tests (no root)
# make check      unit + integration tests (root: real BPF programs on real processes)
# make demo       run the bundled ring job under nccltrace with a stalled rank
# make asan-check unit + integration tests again, nccltrace built with ASan+UBSan (build/asan)
# make fuzz       each libFuzzer target for FUZZ_SECONDS (default 30): tests/fuzz, build/fuzz
# make install    PREFIX (default /usr/local), DESTDIR: the binary in sbin, the libraries put into
#                 jobs in lib/nccltrace, nccltrace(8), bash completion, the agent's systemd unit
# make deb        build/nccltrace_VERSION_ARCH.deb: make install's tree under /usr (dpkg-deb)
# V=1             show the commands

OUTPUT ?= build
CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS ?= -g -O2
WARN := -Wall -Wextra -Werror -Wno-missing-field-initializers
ALL_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser -I$(OUTPUT) \
	      -DNT_VERSION='"$(VERSION)"'
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Iinclude -I$(OUTPUT)
LIBS := -lbpf -ldw -lelf -lz -lzstd -ljansson -lncursesw -ltinfo -lmicrohttpd -lcurl
STATIC_LIBS := -Wl,-Bstatic -lbpf -ldw -lelf -lz -lzstd -llzma -lbz2 -ljansson -lncursesw -ltinfo

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
# user/ has one folder per stage (docs/internals.md, "How it works"): util, trace, model, nccl, diagnose,
# present, cmd
# user/plugin/ holds the libraries nccltrace puts into the job (each its own .so, see below)
# user/helper/ holds the programs nccltrace runs beside the job (HELPERS, below)
USER_SRCS := $(filter-out user/plugin/% user/helper/%,$(wildcard user/*/*.c))
USER_HDRS := $(filter-out user/plugin/% user/helper/%,$(wildcard user/*/*.h))
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
# Libraries loaded into the job (user/plugin/NAME.c -> build/libNAME.so, next to nccltrace, which
# finds them there): plain C against libc only, no symbol newer than glibc 2.17 (GPU nodes run
# older distributions than this build machine; scripts/check-glibc.sh checks it)
PLUGIN_SRCS := $(wildcard user/plugin/*.c)
PLUGINS := $(patsubst user/plugin/%.c,$(OUTPUT)/lib%.so,$(PLUGIN_SRCS))
PLUGIN_CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS)) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude -fPIC -shared \
		 -fvisibility=hidden
# Helpers nccltrace runs beside the job, found where the plugins are: nccltrace-nvml (NVML,
# which the static build cannot dlopen; user/helper/), under the same glibc 2.17 rule
HELPERS := $(OUTPUT)/nccltrace-nvml
# NCCL dlcloses its profiler plugin when the last communicator is destroyed: nodelete keeps the
# state mapped, so the tracer still reads the final counts (and a reload finds it again)
$(OUTPUT)/libnccl-profiler-nccltrace.so: PLUGIN_LDFLAGS := -Wl,-z,nodelete
# everything but main(), linked into the unit tests
PURE_OBJS := $(filter-out $(OUTPUT)/user/cmd/main.o,$(USER_OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
DEMO := $(OUTPUT)/ringjob
CALLCOST := $(OUTPUT)/callcost
DIAGBENCH := $(OUTPUT)/diagbench
DUMPSIZE := $(OUTPUT)/dumpsize
FEDBENCH := $(OUTPUT)/fedbench
PROFCOST := $(OUTPUT)/profcost
PYCOST := $(OUTPUT)/pycost
SCANCOST := $(OUTPUT)/scancost

# the fake NCCL library and the NCCL fixture job (tests/fixtures)
.DEFAULT_GOAL := all
-include tests/fixtures/fixtures.mk

.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS) $(SKELS) $(OUTPUT)/vmlinux.h
.PHONY: all static bundle test check demo bench gpu clean format unit-bins asan asan-check fuzz fuzz-build fuzz-bins install uninstall deb

all: $(OUTPUT)/nccltrace $(PLUGINS) $(HELPERS) $(DEMO) $(FIXTURES)

$(OUTPUT) $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(Q)if [ ! -r $(VMLINUX_BTF) ]; then \
		echo "error: $(VMLINUX_BTF) missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF=y is needed; or set VMLINUX_BTF=PATH)" >&2; \
		exit 1; fi
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

# one object per bpf/*.bpf.c, each including its parts (bpf/*.bpf.h)
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.bpf.h) include/nccltrace.h $(OUTPUT)/vmlinux.h \
		   | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/user/%.o: user/%.c $(USER_HDRS) $(wildcard include/*.h) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@


$(OUTPUT)/lib%.so: user/plugin/%.c $(wildcard include/*.h) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PLUGIN_CFLAGS) $< -Wl,--fatal-warnings,-z,defs $(PLUGIN_LDFLAGS) -o $@
	$(Q)scripts/check-glibc.sh $@

# dlopen at its GLIBC_2.2.5 version, from libdl.so.2 (a stub from glibc 2.34 on, kept needed);
# an executable's start (crt1.o) needs glibc 2.34: older nodes go without NVML, and say so
$(OUTPUT)/nccltrace-nvml: user/helper/nccltrace-nvml.c include/nvmlapi.h | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(filter-out -fsanitize=%,$(CFLAGS)) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude $< \
		-Wl,--fatal-warnings,--no-as-needed -ldl -o $@
	$(Q)GLIBC_MAX=2.34 scripts/check-glibc.sh $@

$(OUTPUT)/nccltrace: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LIBS) -Wl,--fatal-warnings -o $@

static: $(OUTPUT)/nccltrace-static $(PLUGINS) $(HELPERS)

# the full build with every library it loads and glibc's loader, for any x86-64 Linux
bundle: $(OUTPUT)/nccltrace $(PLUGINS) $(HELPERS)
	$(call msg,BUNDLE,$(OUTPUT)/nccltrace-bundle)
	$(Q)scripts/bundle.sh $(OUTPUT) $(OUTPUT)/nccltrace-bundle >/dev/null

# the static binary reads /etc/passwd itself (NSS needs dynamic loading): own objects
STATIC_OBJS := $(patsubst user/%.c,$(OUTPUT)/static/user/%.o,$(USER_SRCS))

$(OUTPUT)/static/user/%.o: user/%.c $(USER_HDRS) $(wildcard include/*.h) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -DNT_STATIC -c $< -o $@

$(OUTPUT)/nccltrace-static: $(STATIC_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -static $^ $(STATIC_LIBS) -Wl,--fatal-warnings -o $@

# the demo job: ringjob.c (main, options, messages, clocks), ringworker.c, ringlauncher.c
DEMO_SRCS := $(wildcard tests/demo/*.c)
$(DEMO): $(DEMO_SRCS) tests/demo/ringjob.h | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -pthread $(DEMO_SRCS) -o $@

$(OUTPUT)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(PURE_OBJS) | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(TEST_DEFS) $(filter-out %.h %.names,$^) $(LIBS) -lcmocka -o $@

# The probe table's mangled names against what g++ makes of NCCL's signatures (nccl_sigs.cc)
SIGS_NAMES := $(OUTPUT)/tests/nccl_sigs.names
$(SIGS_NAMES): tests/unit/nccl_sigs.cc | $(OUTPUT)/tests
	$(call msg,CXX,$@)
	$(Q)for p in 1 2; do $(CXX) -DPART=$$p -c -O0 -o $@.$$p.o $< || exit 1; done
	$(Q)nm --defined-only $@.1.o $@.2.o | awk 'NF == 3 && $$3 != "nt_keep" { print $$3 }' \
		| sort -u > $@
$(OUTPUT)/tests/test_nccllib: $(SIGS_NAMES)
$(OUTPUT)/tests/test_nccllib: TEST_DEFS = -DNCCL_SIGS_NAMES='"$(abspath $(SIGS_NAMES))"' \
	-DFAKENCCL_LIB='"$(abspath $(FAKENCCL))"' -DFAKENCCL_230_LIB='"$(abspath $(FAKENCCL_230))"'

# the profiler plugin's test drives the real plugin (dlopen) and reads it back as the tracer does
$(OUTPUT)/tests/test_ncclprof: LIBS += -ldl
$(OUTPUT)/tests/test_ncclprof: | $(PLUGINS)

test: $(UNIT_BINS)
	$(Q)scripts/check-layers.sh
	$(Q)scripts/run-tests.sh --unit $(UNIT_BINS)

# all three passes run, whatever the first gives: CI reports every failure at once, and the
# passes' failures again at the end (build/check-summary.txt), where a log's tail shows them
CHECK_SUMMARY := $(abspath $(OUTPUT))/check-summary.txt
# the builds run JOBS compiles at a time (default: the CPUs), make -jN or not
JOBS ?= $(shell nproc)
# integration scripts LANES at a time (scripts/run-tests.sh NT_LANES; those that load the
# machine or measure what a neighbour would stretch run alone). Four: with the jobs' waits
# napping (lib.sh FIXTURE_IDLE_US) make check takes about 20 minutes on 2 CPUs instead of 40,
# but a check that measures a time or a window fails now and then beside three other scripts
# (a different one each run, docs/benchmarks.md "The test suite"): a script that failed in a
# lane runs again alone after the lanes, counts as that run says, and the summary names the
# checks it failed beside the others. LANES=1: one at a time, no second run
LANES ?= 4
export NT_LANES ?= $(LANES)
check:
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) all unit-bins
	$(Q)$(MAKE) --no-print-directory asan
	$(Q)$(MAKE) --no-print-directory fuzz-build
	$(Q)scripts/check-layers.sh
	$(Q)rc=0; rm -rf $(CHECK_SUMMARY) $(PLAIN_DUMPS); \
	NT_SUMMARY=$(CHECK_SUMMARY) NT_PASS=plain NT_KEEP_DUMPS=$(PLAIN_DUMPS) \
		scripts/run-tests.sh --unit $(UNIT_BINS) --integration tests/integration || rc=1; \
	NT_SUMMARY=$(CHECK_SUMMARY) $(MAKE) --no-print-directory asan-check || rc=1; \
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) || rc=1; \
	echo; echo "make check:"; cat $(CHECK_SUMMARY) 2>/dev/null; \
	exit $$rc

unit-bins: $(UNIT_BINS)

# The sanitizers' build: clang, ASan + UBSan, every finding fatal (-fno-sanitize-recover). The
# libraries put into the job stay unsanitized (the job has no ASan runtime): the sanitized
# tracer takes them from build/ (NCCLTRACE_LIBDIR), the fixtures too
SAN_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	      -fno-sanitize-recover=all
SAN_OUT := $(OUTPUT)/asan
asan:
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) OUTPUT=$(SAN_OUT) CC=$(CLANG) \
		CFLAGS="$(SAN_CFLAGS)" $(SAN_OUT)/nccltrace unit-bins

# Scripts left out of the sanitizers' pass (said as skips with the reason): the pass runs each of
# the tracer's paths once, and the sanitized readers over every dump the plain pass kept
# (test_dumps). Left out: test_bundle packs build/nccltrace, the plain build, whatever the pass's
# tracer; test_kill SIGKILLs the tracer (no sanitizer report survives it); test_audit's subject
# is the loader audit, a plain library in the job; test_variants and test_adaptive repeat the
# tracer paths of test_nccl and test_stall over library shapes (test_nccllib and fuzz_elf read
# those with the sanitizers; with it the pass took 20.9 minutes, its test_dumps starved at nice
# 19) and job rhythms (test_rhythm); test_scale the paths of test_stall
# with more ranks (32-rank rings on 2 CPUs, 4 minutes); test_attach those of test_attachcomms
# (attach --once: stacks at the attach, sockets from before, the memory scan, the detach) over
# more jobs and moments (3 minutes); test_flood measures the kernel side's intake bound, whose
# user-space side (the polling counted in the kernel, lost records as evidence) test_ncclpoll and
# test_setup run with the sanitizers (2 minutes). Their dumps are test_dumps' too.
SAN_SKIP := test_bundle test_kill test_audit test_variants test_adaptive test_scale test_attach \
	    test_flood
PLAIN_DUMPS := $(abspath $(OUTPUT))/plain-dumps
asan-check: all asan
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 NCCLTRACE_LIBDIR=$(abspath $(OUTPUT)) \
		NT_SANITIZER_LOGS=$(abspath $(SAN_OUT))/sanitizer-logs NT_DUMPS_FROM=$(PLAIN_DUMPS) \
		SKIP_SCRIPTS="$(SAN_SKIP)" \
		SKIP_SCRIPTS_WHY="not in the sanitizers' pass (Makefile SAN_SKIP says why)" NT_PASS=sanitized \
		NT_TRACER=$(abspath $(SAN_OUT))/nccltrace scripts/run-tests.sh \
		--unit $(patsubst $(OUTPUT)/%,$(SAN_OUT)/%,$(UNIT_BINS)) --integration tests/integration

# libFuzzer targets (tests/fuzz/fuzz_*.c) on the parsers of what the job or another host
# controls, built by clang with ASan + UBSan into build/fuzz; scripts/fuzz.sh runs each for
# FUZZ_SECONDS from its seeds (tests/fuzz/corpus/NAME) and prints execs/s and crashes
FUZZ_SECONDS ?= 30
# make check's: from the seeds with libFuzzer's seed fixed, a regression pass (make fuzz explores)
CHECK_FUZZ_SECONDS ?= 15
FUZZ_OUT := $(OUTPUT)/fuzz
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_OUT)/%,$(FUZZ_SRCS))
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
	       -fno-sanitize-recover=all

$(OUTPUT)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(PURE_OBJS)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -Itests/fuzz $(filter %.c %.o,$^) $(LIBS) -o $@

fuzz-bins: $(patsubst tests/fuzz/%.c,$(OUTPUT)/%,$(FUZZ_SRCS)) $(PLUGINS)

fuzz-build:
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) OUTPUT=$(FUZZ_OUT) CC=$(CLANG) \
		CFLAGS="$(FUZZ_CFLAGS)" fuzz-bins

fuzz: fuzz-build
	$(Q)scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

demo: all
	$(Q)scripts/demo.sh

$(CALLCOST): tests/bench/callcost.c tests/bench/bench.h | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@

# diagnose() at 512-4096 ranks, on synthetic snapshots (tests/unit/synth.h)
$(DIAGBENCH): tests/bench/diagbench.c tests/unit/synth.h $(PURE_OBJS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit $(filter %.c %.o,$^) $(LIBS) -o $@

# the dump as the tracer writes it, from a dump of whole snapshots (scripts/bench-dumpsize.sh)
$(DUMPSIZE): tests/bench/dumpsize.c $(PURE_OBJS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(filter %.c %.o,$^) $(LIBS) -o $@

# a job of 64 hosts: the merged report of their dumps, watch's rounds over their /state
$(FEDBENCH): tests/bench/fedbench.c $(PURE_OBJS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(filter %.c %.o,$^) $(LIBS) -lpthread -o $@

# the profiler plugin's cost per collective, on the calls NCCL makes (dlopen, as NCCL)
$(PROFCOST): tests/bench/profcost.c tests/bench/bench.h include/nccl_profiler_abi.h | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -ldl -o $@

# Python stacks read from outside, and the job's slowdown meanwhile (scripts/bench-pystacks.sh)
$(PYCOST): tests/bench/pycost.c $(PURE_OBJS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(filter %.c %.o,$^) $(LIBS) -o $@

# attach's communicator scan of a rank's memory, per process
$(SCANCOST): tests/bench/scancost.c tests/bench/bench.h $(PURE_OBJS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(filter %.c %.o,$^) $(LIBS) -o $@

bench: all $(CALLCOST) $(DIAGBENCH) $(DUMPSIZE) $(FEDBENCH) $(PROFCOST) $(PYCOST) $(SCANCOST)
	$(Q)scripts/bench.sh

# For the GPU machine (no compiler there): the static nccltrace and the bus-bandwidth benchmark,
# built with the CUDA toolkit next to nvcc (its static CUDA runtime and its libnccl)
CUDA_HOME ?= $(shell d=$$(command -v nvcc) && dirname $$(dirname $$(readlink -f $$d)))
BUSBW := $(OUTPUT)/busbw

$(BUSBW): tests/gpu/busbw.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)test -n "$(CUDA_HOME)" || { echo "make gpu: no nvcc on PATH (the CUDA toolkit)" >&2; exit 1; }
	$(Q)$(CC) -O2 -Wall -Wextra -Werror -I$(CUDA_HOME)/include $< -L$(CUDA_HOME)/lib64 \
		-lcudart_static -lnccl -ldl -lpthread -lrt -o $@

gpu: static $(BUSBW)

# Installed like a system tool (bpftool's sbin): the libraries beside no binary but in
# lib/nccltrace, which the binary finds as its ../lib/nccltrace (relocatable: PREFIX is
# compiled in nowhere); the man page made from each command's --help (scripts/manpage.sh)
PREFIX ?= /usr/local
SBINDIR = $(PREFIX)/sbin
NT_LIBDIR = $(PREFIX)/lib/nccltrace
MANDIR = $(PREFIX)/share/man/man8
COMPDIR = $(PREFIX)/share/bash-completion/completions
UNITDIR = $(PREFIX)/lib/systemd/system
DOCDIR = $(PREFIX)/share/doc/nccltrace
install: $(OUTPUT)/nccltrace $(PLUGINS) $(HELPERS)
	$(Q)install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(NT_LIBDIR) $(DESTDIR)$(MANDIR) \
		$(DESTDIR)$(COMPDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)
	$(Q)install -m 0755 $(OUTPUT)/nccltrace $(DESTDIR)$(SBINDIR)/nccltrace
	$(Q)install -m 0644 $(PLUGINS) $(DESTDIR)$(NT_LIBDIR)/
	$(Q)install -m 0755 $(HELPERS) $(DESTDIR)$(NT_LIBDIR)/
	$(Q)scripts/manpage.sh $(OUTPUT)/nccltrace $(OUTPUT)/nccltrace.8 $(SBINDIR) $(NT_LIBDIR) \
		$(UNITDIR)
	$(Q)gzip -9n <$(OUTPUT)/nccltrace.8 >$(DESTDIR)$(MANDIR)/nccltrace.8.gz
	$(Q)install -m 0644 dist/nccltrace.bash-completion $(DESTDIR)$(COMPDIR)/nccltrace
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g; s|@UNITDIR@|$(UNITDIR)|g' dist/nccltrace-agent.service.in \
		>$(OUTPUT)/nccltrace-agent.service
	$(Q)install -m 0644 $(OUTPUT)/nccltrace-agent.service $(DESTDIR)$(UNITDIR)/
	$(Q)install -d $(DESTDIR)$(DOCDIR)/docs
	$(Q)install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	$(Q)install -m 0644 docs/*.md docs/*.png $(DESTDIR)$(DOCDIR)/docs/
	$(Q)install -m 0644 LICENSE $(DESTDIR)$(DOCDIR)/copyright
	@echo "installed under $(DESTDIR)$(PREFIX)"

uninstall:
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/nccltrace $(DESTDIR)$(MANDIR)/nccltrace.8.gz \
		$(DESTDIR)$(COMPDIR)/nccltrace $(DESTDIR)$(UNITDIR)/nccltrace-agent.service
	$(Q)rm -rf $(DESTDIR)$(NT_LIBDIR) $(DESTDIR)$(DOCDIR)

deb: $(OUTPUT)/nccltrace $(PLUGINS) $(HELPERS)
	$(Q)rm -rf $(OUTPUT)/deb $(OUTPUT)/nccltrace_*.deb
	$(Q)$(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(OUTPUT))/deb/root \
		>/dev/null
	$(Q)scripts/deb.sh $(OUTPUT)/deb/root $(OUTPUT) $(VERSION)

format:
	$(Q)clang-format -i $(wildcard bpf/*.c bpf/*.h user/*/*.c user/*/*.h include/*.h tests/unit/*.c tests/unit/*.h tests/demo/*.c tests/demo/*.h tests/gpu/*.c tests/fixtures/*.c tests/fixtures/*/*.c tests/fixtures/*.h tests/bench/*.c)

clean:
	$(Q)rm -rf $(OUTPUT)
