# skiff - see README.md. `./build.sh` sets up a fresh machine and builds the musl
# dependency prefix; after that plain `make` rebuilds only skiff itself.
#
#   make            build/skiff: static, stripped, musl
#   make test       unit tests (musl and ASan/UBSan builds) and integration tests
#   make asan       build/asan/skiff and unit tests under ASan+UBSan (host gcc, Debian -dev libs)
#   make dist       dist/skiff-VERSION-linux-x86_64 and its .sha256
#   make format     clang-format every C file
#   make clean

VERSION := $(shell cat VERSION)
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell \
	git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
DEPS := build/deps/prefix

MUSL_CC ?= musl-gcc
HOST_CC ?= gcc
WARN := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers -Wvla \
	-Wstrict-prototypes -Wmissing-prototypes -Wformat=2
COMMON := -std=c11 -D_GNU_SOURCE -I. $(WARN) -MMD -MP \
	-DSKIFF_VERSION='"$(VERSION)"' -DSKIFF_COMMIT='"$(COMMIT)"'
CFLAGS ?= -O2
MUSL_CFLAGS := $(COMMON) $(CFLAGS) -I$(DEPS)/include -ffunction-sections -fdata-sections
MUSL_LDFLAGS := -static -L$(DEPS)/lib -Wl,--gc-sections
ASAN_CFLAGS := $(COMMON) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
LIBS := -larchive -lz -lsqlite3 -lmbedtls -lmbedx509 -lmbedcrypto -lyaml

SRC := $(sort $(wildcard lib/*.c state/*.c supervisor/*.c bootstrap/*.c cmd/*.c))
LIB_SRC := $(filter-out cmd/main.c,$(SRC))
UNIT_SRC := $(sort $(wildcard tests/unit/test-*.c))
UNIT_NAMES := $(UNIT_SRC:tests/unit/%.c=%)

OBJ := $(SRC:%.c=build/obj/%.o)
LIB_OBJ := $(LIB_SRC:%.c=build/obj/%.o)
ASAN_OBJ := $(SRC:%.c=build/asan/obj/%.o)
ASAN_LIB_OBJ := $(LIB_SRC:%.c=build/asan/obj/%.o)
UNIT_BIN := $(UNIT_NAMES:%=build/unit/%)
ASAN_UNIT_BIN := $(UNIT_NAMES:%=build/asan/unit/%)

all: build/skiff

$(DEPS)/BUILD-INFO:
	./build.sh deps

build/obj/%.o: %.c $(DEPS)/BUILD-INFO
	@mkdir -p $(@D)
	$(MUSL_CC) $(MUSL_CFLAGS) -c $< -o $@

build/libskiff.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

build/skiff: build/obj/cmd/main.o build/libskiff.a
	$(MUSL_CC) $(MUSL_CFLAGS) $^ $(MUSL_LDFLAGS) $(LIBS) -s -o $@.tmp
	@file -L $@.tmp | grep -q 'statically linked' || { echo "error: $@ is not static" >&2; exit 1; }
	@size=$$(stat -c %s $@.tmp); [ $$size -le 4194304 ] || \
		{ echo "error: $@ is $$size bytes, over the 4 MB budget" >&2; exit 1; }
	mv $@.tmp $@

build/unit/%: tests/unit/%.c tests/unit/harness.h build/libskiff.a
	@mkdir -p $(@D)
	$(MUSL_CC) $(MUSL_CFLAGS) $< build/libskiff.a $(MUSL_LDFLAGS) $(LIBS) -o $@

# --- sanitizer build: host gcc against Debian's -dev packages (build.sh installs them) ---
build/asan/obj/%.o: %.c
	@mkdir -p $(@D)
	$(HOST_CC) $(ASAN_CFLAGS) -c $< -o $@

build/asan/libskiff.a: $(ASAN_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

build/asan/skiff: build/asan/obj/cmd/main.o build/asan/libskiff.a
	$(HOST_CC) $(ASAN_CFLAGS) $^ $(LIBS) -o $@

build/asan/unit/%: tests/unit/%.c tests/unit/harness.h build/asan/libskiff.a
	@mkdir -p $(@D)
	$(HOST_CC) $(ASAN_CFLAGS) $< build/asan/libskiff.a $(LIBS) -o $@

asan: build/asan/skiff $(ASAN_UNIT_BIN)

# --- tests -----------------------------------------------------------------------------
unit: $(UNIT_BIN)

test: build/skiff unit asan
	tests/run-tests

# Integration tests against the sanitizer build of the binary (daemon paths under ASan).
test-asan: build/skiff build/asan/skiff
	SKIFF_TEST_BIN=$(CURDIR)/build/asan/skiff prove -f tests/t/

dist: build/skiff
	@mkdir -p dist
	cp build/skiff dist/skiff-$(VERSION)-linux-x86_64
	cd dist && sha256sum skiff-$(VERSION)-linux-x86_64 > skiff-$(VERSION)-linux-x86_64.sha256
	@cat dist/skiff-$(VERSION)-linux-x86_64.sha256

format:
	clang-format -i $(SRC) $(wildcard */*.h tests/unit/*.c tests/unit/*.h)

clean:
	rm -rf build/obj build/asan build/unit build/libskiff.a build/skiff

.PHONY: all asan unit test test-asan dist format clean
.SECONDARY:

-include $(OBJ:.o=.d) $(ASAN_OBJ:.o=.d)
