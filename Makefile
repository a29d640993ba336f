# cuasync — build, test, run, install.
#
# Knobs (all overridable: `make CC=clang`, and LuaRocks passes its own):
#   CC, CFLAGS, LDFLAGS   compiler and flags for libcuasync.so (C99, strict warnings)
#   LIBFLAG               how to link a shared library (LuaRocks' variable)
#   LUA                   the LuaJIT interpreter (default: luajit)
#   BUSTED                busted run under LuaJIT (default: luajit `command -v busted`)
#   PREFIX, LUADIR, LIBDIR, BINDIR   where `make install` puts the Lua modules + kernels, the
#                         library and the `cuasync` command
#   CUDA_HOME             toolkit whose NVRTC and headers are used (default /usr/local/cuda)
#   CUASYNC_REQUIRE_GPU=1 make `make test` fail instead of skipping GPU specs when no GPU is found
#   make asan             native/ built with ASan + UBSan (build/asan/), the CPU specs run against it
#   make dist             the release: DIST/cuasync-VERSION.tar.gz and the source rock beside it
#   DIST                  where make dist writes (default build/dist)
#
# Nothing links against CUDA: the driver and NVRTC are dlopen'ed at run time.

SHELL := /bin/bash
CC ?= cc
CFLAGS ?= -O2
WARN := -std=c99 -Wall -Wextra -pedantic -Wstrict-prototypes -Wmissing-prototypes -Wshadow \
        -Wpointer-arith -Wcast-align -Werror=implicit-function-declaration
LIBFLAG ?= -shared
LUA ?= luajit
BUSTED ?= $(LUA) $(shell command -v busted 2>/dev/null || echo busted)
PREFIX ?= /usr/local
LUADIR ?= $(PREFIX)/share/lua/5.1
LIBDIR ?= $(PREFIX)/lib/lua/5.1
BINDIR ?= $(PREFIX)/bin

SRC := $(wildcard native/*.c)
OBJ := $(patsubst native/%.c,build/obj/%.o,$(SRC))
LIB := build/libcuasync.so

.PHONY: all test run install clean deps asan docs dist

all: $(LIB)

build/obj/%.o: native/%.c $(wildcard native/*.h) | build/obj
	$(CC) $(WARN) $(CFLAGS) -fPIC -fvisibility=default -c $< -o $@

# NVTX 3 is header-only (it dlopens a profiler's injection library itself): used where the
# toolkit's headers are; without them cuasync_nvtx_available() says 0.
CUDA_HOME ?= /usr/local/cuda
NVTX_FLAGS := $(if $(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h),-isystem $(CUDA_HOME)/include -DCUASYNC_HAVE_NVTX)
build/obj/cuasync_nvtx.o: native/cuasync_nvtx.c native/cuasync_nvtx.h | build/obj
	$(CC) $(WARN) $(CFLAGS) $(NVTX_FLAGS) -fPIC -fvisibility=default -c $< -o $@

build/obj:
	mkdir -p $@

$(LIB): $(OBJ)
	$(CC) $(LIBFLAG) $(LDFLAGS) -o $@ $(OBJ) -ldl

deps:
	@bash .ci/deps

# Specs run through busted's TAP output; the last line is the count CI reads.
test: deps all
	@set -o pipefail; rc=0; \
	$(BUSTED) -o TAP spec | tee build/test.tap || rc=$$?; \
	awk -f .ci/tap-summary.awk build/test.tap; exit $$rc

# The main job: the pipeline-depth sweep of the flagship pipeline kernel (48 variants), run by the
# command (`luajit examples/pipeline_tma.lua --out build` does the same on its own); its table,
# chart, knee, CSV, JSON, T4 and plot go to build/.
run: deps all
	$(LUA) bin/cuasync sweep examples/pipeline_tma.lua --out build

# docs/device.md is written from the device headers' comments (spec/house/docs_spec.lua checks it).
docs: all
	$(LUA) -e 'package.path = "lua/?.lua;lua/?/init.lua;" .. package.path; package.cpath = "build/?.so;" .. package.cpath' \
	  -e 'require("cuasync.tools.device_doc_md").write("docs/device.md")'

# eval "$(make env)": this checkout's lua/, build/ and bin/ first on LUA_PATH, LUA_CPATH and PATH,
# so that `luajit SCRIPT.lua` and `cuasync ...` run from a clone (README "Running from a checkout").
# The library is built first, its messages on stderr: stdout is only the three exports.
.PHONY: env
env:
	@$(MAKE) -s --no-print-directory all >&2
	@echo "export LUA_PATH='$(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;'\"\$${LUA_PATH:-;}\""
	@echo "export LUA_CPATH='$(CURDIR)/build/?.so;'\"\$${LUA_CPATH:-;}\""
	@echo "export PATH='$(CURDIR)/bin:'\"\$$PATH\""

# ASan + UBSan: LuaJIT itself is not instrumented, so the runtime is preloaded; leaks are not
# checked (LuaJIT frees its arenas at exit in ways LSan reports). GPU specs are excluded (the
# driver is not built with ASan and trips its interceptors).
ASAN_LIB := build/asan/libcuasync.so
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g -O1
$(ASAN_LIB): $(SRC) $(wildcard native/*.h)
	mkdir -p build/asan
	$(CC) $(WARN) $(ASAN_FLAGS) $(NVTX_FLAGS) -fPIC -shared -o $@ $(SRC) -ldl

asan: deps $(ASAN_LIB)
	@set -o pipefail; rc=0; \
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	CUASYNC_LIB=$(CURDIR)/$(ASAN_LIB) $(BUSTED) -o TAP --exclude-tags=gpu spec | tee build/asan.tap || rc=$$?; \
	awk -f .ci/tap-summary.awk build/asan.tap; exit $$rc

# The Lua tree and kernels-src as they are laid out (every folder, no list to keep in step).
install: all
	mkdir -p $(DESTDIR)$(LUADIR)/cuasync/kernels-src $(DESTDIR)$(LIBDIR) $(DESTDIR)$(BINDIR)
	cd lua/cuasync && find . -name '*.lua' -exec install -D -m 644 {} $(DESTDIR)$(LUADIR)/cuasync/{} \;
	cd kernels-src && find . \( -name '*.cu' -o -name '*.cuh' \) -exec install -D -m 644 {} $(DESTDIR)$(LUADIR)/cuasync/kernels-src/{} \;
	cp $(LIB) $(DESTDIR)$(LIBDIR)/
	cp bin/cuasync $(DESTDIR)$(BINDIR)/cuasync

# The release (README "Releases"): the tracked files as git sees them (HEAD, or a stash commit of
# the working tree's tracked changes, with a note) as DIST/cuasync-VERSION.tar.gz, and the source
# rock DIST/cuasync-VERSION-1.src.rock: a zip of cuasync-VERSION-1.rockspec and that tarball,
# which `luarocks install` builds with no network. VERSION is native/cuasync.h's
# CUASYNC_VERSION_STRING (what cuasync.version says); spec/house/release_spec.lua installs the rock.
VERSION := $(shell sed -n 's/^\#define CUASYNC_VERSION_STRING "\(.*\)"/\1/p' native/cuasync.h)
DIST ?= build/dist
dist:
	@test -f cuasync-$(VERSION)-1.rockspec || { echo "cuasync: no cuasync-$(VERSION)-1.rockspec for version '$(VERSION)' (native/cuasync.h)" >&2; exit 1; }
	@mkdir -p $(DIST)
	@tree=$$(git stash create) || exit 1; \
	if [ -n "$$tree" ]; then echo "cuasync: note: the archive holds the tracked files with their uncommitted changes (untracked files are left out)" >&2; fi; \
	echo "git archive --format=tar.gz --prefix=cuasync-$(VERSION)/ -o $(DIST)/cuasync-$(VERSION).tar.gz $${tree:-HEAD}"; \
	git archive --format=tar.gz --prefix=cuasync-$(VERSION)/ -o $(abspath $(DIST))/cuasync-$(VERSION).tar.gz $${tree:-HEAD}
	cp cuasync-$(VERSION)-1.rockspec $(DIST)/
	rm -f $(DIST)/cuasync-$(VERSION)-1.src.rock
	git archive --format=zip -o $(abspath $(DIST))/cuasync-$(VERSION)-1.src.rock \
	  --add-file=$(abspath $(DIST))/cuasync-$(VERSION)-1.rockspec --add-file=$(abspath $(DIST))/cuasync-$(VERSION).tar.gz \
	  $$(git hash-object -t tree /dev/null)
	@echo "cuasync $(VERSION): $(DIST)/cuasync-$(VERSION)-1.src.rock (luarocks --lua-version=5.1 install $(DIST)/cuasync-$(VERSION)-1.src.rock)"

clean:
	rm -rf build
