# SPDX-License-Identifier: MIT
#
# make            build build/nccltrace and the demo job
# make static     build build/nccltrace-static (libbpf, libelf, libz, libzstd, jansson linked in)
# make test       unit tests (no root)
# make check      unit + integration tests (root: real BPF programs on real processes)
# make demo       run the bundled ring job under nccltrace with a stalled rank
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
LIBS := -lbpf -ldw -lelf -lz -ljansson -lncursesw -ltinfo
STATIC_LIBS := -Wl,-Bstatic -lbpf -ldw -lelf -lz -lzstd -llzma -lbz2 -ljansson -lncursesw -ltinfo

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(wildcard user/*.c)
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
# modules without BPF or process I/O, linked into the unit tests
PURE_OBJS := $(filter-out $(OUTPUT)/user/main.o,$(USER_OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
DEMO := $(OUTPUT)/ringjob
CALLCOST := $(OUTPUT)/callcost

# the fake NCCL library and the NCCL fixture job (tests/fixtures)
.DEFAULT_GOAL := all
-include tests/fixtures/fixtures.mk

.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS) $(SKELS) $(OUTPUT)/vmlinux.h
.PHONY: all static test check demo bench gpu clean format

all: $(OUTPUT)/nccltrace $(DEMO) $(FIXTURES)

$(OUTPUT) $(OUTPUT)/user $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(Q)if [ ! -r $(VMLINUX_BTF) ]; then \
		echo "error: $(VMLINUX_BTF) missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF=y is needed; or set VMLINUX_BTF=PATH)" >&2; \
		exit 1; fi
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c include/nccltrace.h $(OUTPUT)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/user/%.o: user/%.c $(wildcard user/*.h) include/nccltrace.h $(SKELS) | $(OUTPUT)/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUTPUT)/nccltrace: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LIBS) -Wl,--fatal-warnings -o $@

static: $(OUTPUT)/nccltrace-static

# the static binary reads /etc/passwd itself (NSS needs dynamic loading): own objects
STATIC_OBJS := $(patsubst user/%.c,$(OUTPUT)/static/user/%.o,$(USER_SRCS))

$(OUTPUT)/static/user:
	$(Q)mkdir -p $@

$(OUTPUT)/static/user/%.o: user/%.c $(wildcard user/*.h) include/nccltrace.h $(SKELS) | $(OUTPUT)/static/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -DNT_STATIC -c $< -o $@

$(OUTPUT)/nccltrace-static: $(STATIC_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -static $^ $(STATIC_LIBS) -Wl,--fatal-warnings -o $@

$(DEMO): tests/demo/ringjob.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -pthread $< -o $@

$(OUTPUT)/tests/%: tests/unit/%.c tests/unit/testutil.h $(PURE_OBJS) | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(filter-out %.h,$^) $(LIBS) -lcmocka -o $@

test: $(UNIT_BINS)
	$(Q)scripts/run-tests.sh --unit $(UNIT_BINS)

check: all $(UNIT_BINS)
	$(Q)scripts/run-tests.sh --unit $(UNIT_BINS) --integration tests/integration

demo: all
	$(Q)scripts/demo.sh

$(CALLCOST): tests/bench/callcost.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@

bench: all $(CALLCOST)
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

format:
	$(Q)clang-format -i $(wildcard bpf/*.c user/*.c user/*.h include/*.h tests/unit/*.c tests/demo/*.c tests/gpu/*.c tests/fixtures/*.c tests/fixtures/*.h tests/bench/*.c)

clean:
	$(Q)rm -rf $(OUTPUT)
