# skiff - see README.md. `./build.sh` sets up a fresh machine and builds the musl
# dependency prefix; after that plain `make` rebuilds only skiff itself.
#
#   make            build/skiff: static, stripped, musl
#   make test       unit tests (musl and ASan/UBSan builds) and integration tests
#   make asan       build/asan/skiff and unit tests under ASan+UBSan (host gcc, Debian -dev libs)
#   make tsan       build/tsan/skiff under ThreadSanitizer (host gcc; not run by make test)
#   make fuzz       build/fuzz/fuzz-*: libFuzzer harnesses (host clang, ASan+UBSan)
#   make fuzz-long  run each harness for FUZZ_TIME seconds (default 600); see docs/testing.md
#   make dist       dist/skiff-VERSION-linux-x86_64 and its .sha256
#   make format     clang-format every C file
#   make clean

VERSION := $(shell cat VERSION)
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell \
	git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
DEPS := build/deps/prefix
# Another build dir (make B=build-x) lets two builds run side by side.
B ?= build
# Every core, unless -j was given: `make test` builds three binaries and the unit tests.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

MUSL_CC ?= musl-gcc
HOST_CC ?= gcc
WARN := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers -Wvla \
	-Wstrict-prototypes -Wmissing-prototypes -Wformat=2
COMMON := -std=c11 -D_GNU_SOURCE -I. -I$(B)/gen $(WARN) -MMD -MP
CFLAGS ?= -O2
MUSL_CFLAGS := $(COMMON) $(CFLAGS) -I$(DEPS)/include -ffunction-sections -fdata-sections
MUSL_LDFLAGS := -static -L$(DEPS)/lib -Wl,--gc-sections
ASAN_CFLAGS := $(COMMON) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
TSAN_CFLAGS := $(COMMON) -O1 -g -fno-omit-frame-pointer -fsanitize=thread
LIBS := -larchive -lz -lzstd -lsqlite3 -lmbedtls -lmbedx509 -lmbedcrypto -lyaml -lm

# state/images.c and state/mkimage.c stand apart: the images are made by a program that
# links libskiff.a (below).
IMAGE_SRC := state/images.c state/mkimage.c
SRC := $(sort $(filter-out $(IMAGE_SRC),$(wildcard lib/*.c state/*.c supervisor/*.c \
	supervisor/*/*.c bootstrap/*/*.c cmd/*.c)))
LIB_SRC := $(filter-out cmd/main.c,$(SRC))
UNIT_SRC := $(sort $(wildcard tests/unit/test-*.c))
UNIT_NAMES := $(UNIT_SRC:tests/unit/%.c=%)

OBJ := $(SRC:%.c=$(B)/obj/%.o)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
ASAN_OBJ := $(SRC:%.c=$(B)/asan/obj/%.o)
ASAN_LIB_OBJ := $(LIB_SRC:%.c=$(B)/asan/obj/%.o)
UNIT_BIN := $(UNIT_NAMES:%=$(B)/unit/%)
ASAN_UNIT_BIN := $(UNIT_NAMES:%=$(B)/asan/unit/%)
TSAN_OBJ := $(SRC:%.c=$(B)/tsan/obj/%.o)

all: $(B)/skiff

# Rewritten only when the version or commit changes, so that only lib/self.c recompiles.
$(B)/gen/version.h: FORCE
	@mkdir -p $(@D)
	@printf '#define SKIFF_VERSION "%s"\n#define SKIFF_COMMIT "%s"\n' '$(VERSION)' '$(COMMIT)' >$@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(B)/obj/lib/self.o $(B)/asan/obj/lib/self.o $(B)/tsan/obj/lib/self.o: $(B)/gen/version.h

Q := $(if $(V),,@)

# build.sh makes both in one run: a grouped target (&:), for under -j two runs would share
# one private apt state and the host's dpkg lock. Every compiler step waits for it, since
# it also installs the host's tools on a fresh machine (musl-gcc, the -dev libraries of the
# ASan and fuzz builds).
# build.sh runs its own make -j: it gets a MAKEFLAGS of its own, not this jobserver's.
DEPS_READY := $(DEPS)/BUILD-INFO $(DEPS)/lib/libzstd.a
$(DEPS_READY) &:
	MAKEFLAGS= ./build.sh deps

$(B)/obj/%.o: %.c | $(DEPS_READY)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) -c $< -o $@

# The self-copy's two stubs (bootstrap/launch/stub/): static programs of their own, sent to
# a new node before skiff, built for size; bootstrap/launch/install_stub.c embeds them.
STUB_CFLAGS := -std=c11 -D_GNU_SOURCE -I. -I$(DEPS)/include $(WARN) -Os -ffunction-sections \
	-fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-stack-protector
STUB_LDFLAGS := -static -s -Wl,--gc-sections -Wl,--build-id=none -Wl,-z,noseparate-code \
	-Wl,-z,norelro
STUBS := $(B)/stub/skiff-split $(B)/stub/skiff-unzstd

$(B)/stub/skiff-split: bootstrap/launch/stub/split.c bootstrap/launch/stub/stub.h | $(DEPS_READY)
	@mkdir -p $(@D)
	$(Q)$(MUSL_CC) $(STUB_CFLAGS) $< $(STUB_LDFLAGS) -o $@

$(B)/stub/skiff-unzstd: bootstrap/launch/stub/unzstd.c bootstrap/launch/stub/stub.h \
		bootstrap/launch/stub/pack.h lib/sha256_x86.c | $(DEPS_READY)
	@mkdir -p $(@D)
	$(Q)$(MUSL_CC) $(STUB_CFLAGS) -DSTUB_SHA_X86 $< lib/sha256_x86.c $(DEPS)/lib/libzstd-stub.a \
		$(STUB_LDFLAGS) -o $@

$(B)/obj/bootstrap/launch/install_stub.o $(B)/asan/obj/bootstrap/launch/install_stub.o \
$(B)/tsan/obj/bootstrap/launch/install_stub.o \
$(B)/fuzz/obj/bootstrap/launch/install_stub.o: $(STUBS)
STUB_DIR_DEF := -DSKIFF_STUB_DIR='"$(B)/stub"'
$(B)/obj/bootstrap/launch/install_stub.o: MUSL_CFLAGS += $(STUB_DIR_DEF)
$(B)/asan/obj/bootstrap/launch/install_stub.o: ASAN_CFLAGS += $(STUB_DIR_DEF)
$(B)/tsan/obj/bootstrap/launch/install_stub.o: TSAN_CFLAGS += $(STUB_DIR_DEF)
$(B)/fuzz/obj/bootstrap/launch/install_stub.o: FUZZ_CFLAGS += $(STUB_DIR_DEF)

# supervisor/templates.c embeds the scripts in supervisor/templates/ (.incbin, which -MMD
# does not see): the nodes' ~/sky_templates.
TEMPLATES := $(sort $(wildcard supervisor/templates/*/*))
$(B)/obj/supervisor/templates.o $(B)/asan/obj/supervisor/templates.o \
$(B)/tsan/obj/supervisor/templates.o $(B)/fuzz/obj/supervisor/templates.o: $(TEMPLATES)

# cmd/dashboard.c embeds the dashboard's page, script and style (.incbin, as above).
DASH_ASSETS := $(sort $(wildcard cmd/dashboard/*))
$(B)/obj/cmd/dashboard.o $(B)/asan/obj/cmd/dashboard.o \
$(B)/tsan/obj/cmd/dashboard.o $(B)/fuzz/obj/cmd/dashboard.o: $(DASH_ASSETS)

# A new database is written from an image of its schema (state/images.h) that the schema's
# own migrations made here, at build time: mkimage runs them through st_open(). Every build
# (musl, ASan, TSan, fuzz) embeds the same files, with an images.o of its own.
IMAGES := $(B)/gen/node.db
IMAGE_DIR_DEF := -DSKIFF_IMAGE_DIR='"$(B)/gen"'

$(B)/gen/mkimage: state/mkimage.c $(B)/libskiff.a
	@mkdir -p $(@D)
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) $< $(B)/libskiff.a $(MUSL_LDFLAGS) $(LIBS) -o $@

$(B)/gen/node.db: $(B)/gen/mkimage
	$(Q)$(B)/gen/mkimage node $@

$(B)/obj/state/images.o $(B)/asan/obj/state/images.o $(B)/tsan/obj/state/images.o \
$(B)/fuzz/obj/state/images.o: $(IMAGES)
$(B)/obj/state/images.o: MUSL_CFLAGS += $(IMAGE_DIR_DEF)
$(B)/asan/obj/state/images.o: ASAN_CFLAGS += $(IMAGE_DIR_DEF)
$(B)/tsan/obj/state/images.o: TSAN_CFLAGS += $(IMAGE_DIR_DEF)
$(B)/fuzz/obj/state/images.o: FUZZ_CFLAGS += $(IMAGE_DIR_DEF)

$(B)/libskiff.a: $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(B)/skiff: $(B)/obj/cmd/main.o $(B)/obj/state/images.o $(B)/libskiff.a
	@echo "  LINK    $@"
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) $^ $(MUSL_LDFLAGS) $(LIBS) -s -o $@.tmp
	@file -L $@.tmp | grep -q 'statically linked' || { echo "error: $@ is not static" >&2; exit 1; }
	@size=$$(stat -c %s $@.tmp); [ $$size -le 4194304 ] || \
		{ echo "error: $@ is $$size bytes, over the 4 MB budget" >&2; exit 1; }
	$(Q)mv $@.tmp $@

$(B)/unit/%: tests/unit/%.c tests/unit/harness.h $(B)/obj/state/images.o $(B)/libskiff.a
	@mkdir -p $(@D)
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) $< $(B)/obj/state/images.o $(B)/libskiff.a $(MUSL_LDFLAGS) \
		$(LIBS) -o $@

# --- sanitizer build: host gcc against Debian's -dev packages (build.sh installs them) ---
$(B)/asan/obj/%.o: %.c | $(DEPS_READY)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC-ASAN $<")
	$(Q)$(HOST_CC) $(ASAN_CFLAGS) -c $< -o $@

$(B)/asan/libskiff.a: $(ASAN_LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(B)/asan/skiff: $(B)/asan/obj/cmd/main.o $(B)/asan/obj/state/images.o $(B)/asan/libskiff.a
	$(Q)$(HOST_CC) $(ASAN_CFLAGS) $^ $(LIBS) -o $@

$(B)/asan/unit/%: tests/unit/%.c tests/unit/harness.h $(B)/asan/obj/state/images.o \
		$(B)/asan/libskiff.a
	@mkdir -p $(@D)
	$(Q)$(HOST_CC) $(ASAN_CFLAGS) $< $(B)/asan/obj/state/images.o $(B)/asan/libskiff.a \
		$(LIBS) -o $@

asan: $(B)/asan/skiff $(ASAN_UNIT_BIN)

# ThreadSanitizer: the launcher's threads (bootstrap, sync, submit, the install sessions).
# Not in `make test`; run a script against it (docs/testing.md).
$(B)/tsan/obj/%.o: %.c | $(DEPS_READY)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC-TSAN $<")
	$(Q)$(HOST_CC) $(TSAN_CFLAGS) -c $< -o $@

$(B)/tsan/skiff: $(TSAN_OBJ) $(B)/tsan/obj/state/images.o
	$(Q)$(HOST_CC) $(TSAN_CFLAGS) $^ $(LIBS) -o $@

tsan: $(B)/tsan/skiff

# --- fuzzing: libFuzzer harnesses in tests/fuzz/, host clang, its own object dir ---------
# gcc is the warning gate (-Werror above); clang warns differently, so here it only warns.
FUZZ_CC ?= clang
FUZZ_CFLAGS := $(COMMON) -O1 -g -fno-omit-frame-pointer \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-Wno-format-nonliteral -Wno-error
FUZZ_NAMES := $(patsubst tests/fuzz/%.c,%,$(sort $(wildcard tests/fuzz/fuzz-*.c)))
FUZZ_OBJ := $(LIB_SRC:%.c=$(B)/fuzz/obj/%.o)
FUZZ_BIN := $(FUZZ_NAMES:%=$(B)/fuzz/%)
FUZZ_TIME ?= 600

# tests/fuzz/setup.sh installs clang and its fuzzer runtime with apt when missing.
$(B)/fuzz/.toolchain: tests/fuzz/setup.sh | $(DEPS_READY)
	$(Q)FUZZ_CC=$(FUZZ_CC) tests/fuzz/setup.sh
	@mkdir -p $(@D) && touch $@

$(B)/fuzz/obj/lib/self.o: $(B)/gen/version.h
$(B)/fuzz/obj/%.o: %.c | $(B)/fuzz/.toolchain
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC-FUZZ $<")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(B)/fuzz/libskiff.a: $(FUZZ_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(B)/fuzz/fuzz-%: tests/fuzz/fuzz-%.c tests/fuzz/fuzz.h $(B)/fuzz/obj/state/images.o \
		$(B)/fuzz/libskiff.a
	@echo "  FUZZ    $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(B)/fuzz/obj/state/images.o \
		$(B)/fuzz/libskiff.a $(LIBS) -o $@

fuzz: $(FUZZ_BIN)

fuzz-long: fuzz
	tests/fuzz/run.sh $(B)/fuzz $(FUZZ_TIME) $(B)/fuzz/work

# --- tests -----------------------------------------------------------------------------
unit: $(UNIT_BIN)

test: $(B)/skiff unit asan fuzz
	B=$(B) tests/run-tests

# Integration tests against the sanitizer build of the binary (daemon paths under ASan).
test-asan: $(B)/skiff $(B)/asan/skiff
	SKIFF_TEST_BIN=$(CURDIR)/$(B)/asan/skiff prove --exec sh tests/t/t*.sh

dist: $(B)/skiff
	@mkdir -p dist
	cp $(B)/skiff dist/skiff-$(VERSION)-linux-x86_64
	cd dist && sha256sum skiff-$(VERSION)-linux-x86_64 > skiff-$(VERSION)-linux-x86_64.sha256
	@cat dist/skiff-$(VERSION)-linux-x86_64.sha256

format:
	@command -v clang-format >/dev/null || sh tests/lib/packages.sh pkg clang-format
	clang-format -i $(SRC) $(IMAGE_SRC) $(wildcard */*.h */*/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.[ch])

clean:
	rm -rf $(B)/obj $(B)/asan $(B)/tsan $(B)/fuzz $(B)/unit $(B)/stub $(B)/libskiff.a $(B)/skiff \
		$(B)/gen/mkimage $(IMAGES)

.PHONY: all asan tsan fuzz fuzz-long unit test test-asan dist format clean FORCE
.SECONDARY:

IMAGE_OBJ := $(foreach d,obj asan/obj tsan/obj fuzz/obj,$(B)/$(d)/state/images.o)
-include $(OBJ:.o=.d) $(ASAN_OBJ:.o=.d) $(TSAN_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d) $(IMAGE_OBJ:.o=.d) \
	$(B)/gen/mkimage.d
