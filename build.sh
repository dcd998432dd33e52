#!/bin/sh
# build.sh - set up a fresh Debian 12 machine and build the static skiff binary.
#
#   ./build.sh            install host tools (apt), build the musl deps, then `make`
#   ./build.sh deps       only the dependency prefix
#   ./build.sh --no-apt   skip the apt step (tools already present)
#
# The six libraries (zlib, libyaml, sqlite3, mbedtls, libarchive, libzstd) come from Debian
# source packages, including bookworm-security, and are built with musl-gcc into
# build/deps/prefix. Each library has a stamp holding the .dsc it was built from and
# the flags; a library is rebuilt only when that stamp changes.
set -eu

top=$(cd "$(dirname "$0")" && pwd)
WORK=$top/build/deps
PREFIX=$WORK/prefix
SRC=$WORK/src
BLD=$WORK/build
COPT=${COPT:--O2}
JOBS=$(nproc 2>/dev/null || echo 2)
LIBS="zlib libyaml sqlite3 mbedtls libarchive libzstd"
# A mirror's index can run ahead of its pool: it lists a new security version whose files
# are not there yet (seen for libzstd 1.5.4+dfsg2-5+deb12u1 and zlib 1:1.2.13.dfsg-1+deb12u1,
# both 404 on the pool while the Sources index names them). Then the library is built from
# the newest version that can be downloaded, said in a warning and in BUILD-INFO, and the
# next run tries the newest again. SKIFF_DEPS_STRICT=1 (release builds) refuses instead.
DEPS_STRICT=${SKIFF_DEPS_STRICT:-0}
HOST_PKGS="musl-tools musl-dev gcc make cmake dpkg-dev tcl xz-utils bzip2 file git
	libyaml-dev libsqlite3-dev libmbedtls-dev libarchive-dev zlib1g-dev libzstd-dev perl python3 valgrind
	procps util-linux
	debian-archive-keyring ca-certificates perl"

do_apt=1
only_deps=0
for a in "$@"; do
	case $a in
	--no-apt) do_apt=0 ;;
	deps) only_deps=1 ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "build.sh: unknown argument '$a'" >&2; exit 2 ;;
	esac
done

say() { printf 'build.sh: %s\n' "$*" >&2; }
die() { printf 'build.sh: error: %s\n' "$*" >&2; exit 1; }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else die "need root or sudo to run: $*"
	fi
}

missing_pkgs() {
	m=""
	for p in $HOST_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || m="$m $p"
	done
	echo "$m"
}

if [ $do_apt = 1 ]; then
	m=$(missing_pkgs)
	if [ -n "$m" ]; then
		say "installing host packages:$m"
		# Another apt (a fresh machine's unattended upgrades) may hold the lock a while.
		lock="-o DPkg::Lock::Timeout=600"
		# shellcheck disable=SC2086
		as_root apt-get $lock update -qq || as_root apt-get $lock update
		# shellcheck disable=SC2086
		as_root env DEBIAN_FRONTEND=noninteractive apt-get $lock install -y -qq \
			--no-install-recommends $m >/dev/null
	fi
fi
command -v musl-gcc >/dev/null || die "musl-gcc not found (apt-get install musl-tools)"

# --- sources: a private apt state derived from this machine's own deb entries ------------

# Print "URI SUITE" for each deb entry (deb822 or one-line format) of the machine.
deb_entries() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
		function flush() { if (t ~ /(^| )deb( |$)/ && u != "") { n = split(u, U, " "); m = split(s, S, " ");
			for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print U[i], S[j] } t = u = s = "" }
		/^[ \t]*$/ { flush(); next }
		/^Types:/ { sub(/^Types:[ \t]*/, ""); t = $0 }
		/^URIs:/ { sub(/^URIs:[ \t]*/, ""); u = $0 }
		/^Suites:/ { sub(/^Suites:[ \t]*/, ""); s = $0 }
		END { flush() }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } print $i, $(i+1) }' "$f"
	done
}

setup_apt() {
	mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" \
		"$WORK/apt/sources.list.d"
	out=$WORK/apt/sources.list.d/skiff-src.sources.new
	: >"$out"
	deb_entries | sort -u | while read -r uri suite; do
		case $suite in
		bookworm|bookworm-updates|bookworm-security) ;;
		*) continue ;;
		esac
		printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n\n' \
			"$uri" "$suite" /usr/share/keyrings/debian-archive-keyring.gpg >>"$out"
	done
	grep -q bookworm-security "$out" || die "no bookworm-security deb entry in /etc/apt: refusing to build without security updates"
	mv "$out" "$WORK/apt/sources.list.d/skiff-src.sources"
}

APT_OPTS() {
	"$@" -o Dir::Etc::SourceList=/dev/null \
		-o Dir::Etc::SourceParts="$WORK/apt/sources.list.d" \
		-o Dir::State::Lists="$WORK/apt/lists" -o Dir::Cache="$WORK/apt/cache" \
		-o Debug::NoLocking=1 $( [ "$(id -u)" = 0 ] && echo "-o APT::Sandbox::User=root")
}
APT() { APT_OPTS apt-get -q "$@"; }
APT_CACHE() { APT_OPTS apt-cache "$@"; }

fetch_sources() {
	setup_apt
	mkdir -p "$SRC"
	# Refresh the index at most once a day; a stale index is retried once after update.
	stamp=$WORK/apt/updated
	if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440 2>/dev/null)" ]; then
		APT update >/dev/null && touch "$stamp"
	fi
	for lib in $LIBS; do
		# The newest version across suites, e.g. 3.6.2-1+deb12u5 from bookworm-security.
		vs=$(APT_CACHE showsrc "$lib" 2>/dev/null | awk '/^Version:/ { print $2 }' |
			sort -V -u -r)
		v=$(echo "$vs" | head -n 1)
		[ -n "$v" ] || die "no source package found for $lib"
		newest=$v
		while :; do
			vv=${v#*:}
			[ ! -f "$SRC/${lib}_$vv.dsc" ] || break
			say "fetching source $lib $v"
			(cd "$SRC" && APT source --download-only "$lib=$v" >/dev/null 2>&1) && break
			APT update >/dev/null
			(cd "$SRC" && APT source --download-only "$lib=$v" >/dev/null 2>&1) && break
			[ "$DEPS_STRICT" != 1 ] || die "cannot download source package $lib=$v (SKIFF_DEPS_STRICT=1)"
			v=$(echo "$vs" | awk -v v="$v" 'f { print; exit } $0 == v { f = 1 }')
			[ -n "$v" ] || die "cannot download any source package of $lib"
		done
		eval "ver_$lib=\$vv"
		note=
		if [ "$v" != "$newest" ]; then
			note=" (the archive lists $newest, whose source cannot be downloaded)"
			say "warning: building $lib $v$note"
		fi
		eval "note_$lib=\$note"
	done
}

# --- per-library builds ------------------------------------------------------------------

unpack() {
	lib=$1 dsc=$2
	rm -rf "${BLD:?}/$lib"
	mkdir -p "$BLD"
	dpkg-source -q -x "$SRC/$dsc" "$BLD/$lib" >/dev/null 2>&1 || die "dpkg-source -x $dsc failed"
	rm -f "$BLD"/*.orig.tar.* "$BLD"/*.debian.tar.*
}

build_zlib() {
	CC=musl-gcc CFLAGS="$COPT" ./configure --static --prefix="$PREFIX" >/dev/null
	make -s -j"$JOBS" libz.a >/dev/null && make -s install >/dev/null
}

build_libyaml() {
	cmake -S . -B _build -G "Unix Makefiles" -DCMAKE_C_COMPILER=musl-gcc \
		-DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="$COPT -DNDEBUG" \
		-DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF \
		-DINSTALL_CMAKE_DIR=lib/cmake/yaml -DCMAKE_INSTALL_PREFIX="$PREFIX" >/dev/null
	cmake --build _build -j "$JOBS" >/dev/null && cmake --build _build --target install >/dev/null
}

build_sqlite3() {
	mkdir _build && cd _build
	../configure CC=musl-gcc \
		CFLAGS="$COPT -DSQLITE_THREADSAFE=1 -DSQLITE_DEFAULT_WAL_SYNCHRONOUS=1 -DSQLITE_DQS=0 -DSQLITE_USE_URI=1 -DSQLITE_DEFAULT_FOREIGN_KEYS=1" \
		--prefix="$PREFIX" --disable-shared --enable-static --disable-tcl --disable-readline \
		--disable-editline --disable-load-extension --enable-threadsafe --enable-fts5 >/dev/null
	make -s -j"$JOBS" libsqlite3.la >/dev/null
	mkdir -p "$PREFIX/lib/pkgconfig" "$PREFIX/include"
	install -m 644 .libs/libsqlite3.a "$PREFIX/lib/"
	install -m 644 sqlite3.h ../src/sqlite3ext.h "$PREFIX/include/"
	install -m 644 sqlite3.pc "$PREFIX/lib/pkgconfig/"
}

build_mbedtls() {
	cfg=include/mbedtls/config.h
	sed -i 's|^//#define MBEDTLS_THREADING_C|#define MBEDTLS_THREADING_C|;
		s|^//#define MBEDTLS_THREADING_PTHREAD|#define MBEDTLS_THREADING_PTHREAD|' "$cfg"
	grep -q '^#define MBEDTLS_THREADING_C' "$cfg" || die "mbedtls: THREADING_C edit did not apply"
	grep -q '^#define MBEDTLS_THREADING_PTHREAD' "$cfg" || die "mbedtls: THREADING_PTHREAD edit did not apply"
	ep=library/entropy_poll.c
	sed -i 's|#if ((defined(__linux__) \&\& defined(__GLIBC__)) \|\| defined(__midipix__))|#if (defined(__linux__) \|\| defined(__midipix__))|' "$ep"
	grep -q '^#if (defined(__linux__) || defined(__midipix__))' "$ep" ||
		die "mbedtls: getrandom guard edit did not apply"
	make -s -j"$JOBS" lib CC=musl-gcc AR=ar CFLAGS="$COPT" >/dev/null
	mkdir -p "$PREFIX/include" "$PREFIX/lib"
	rm -rf "$PREFIX/include/mbedtls" "$PREFIX/include/psa"
	cp -r include/mbedtls include/psa "$PREFIX/include/"
	cp library/libmbedcrypto.a library/libmbedx509.a library/libmbedtls.a "$PREFIX/lib/"
}

build_libarchive() {
	mkdir _build && cd _build
	../configure CC=musl-gcc CFLAGS="$COPT" CPPFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib" \
		PKG_CONFIG_LIBDIR="$PREFIX/lib/pkgconfig" PKG_CONFIG_PATH= \
		--prefix="$PREFIX" --disable-maintainer-mode --disable-dependency-tracking \
		--disable-shared --enable-static --disable-bsdtar --disable-bsdcat --disable-bsdcpio \
		--disable-acl --disable-xattr --disable-posix-regex-lib \
		--with-zlib --without-bz2lib --without-libb2 --without-iconv --without-lz4 \
		--without-zstd --without-lzma --without-lzo2 --without-cng --without-mbedtls \
		--without-nettle --without-openssl --without-xml2 --without-expat >/dev/null
	grep -q '^#define HAVE_ZLIB_H 1' config.h || die "libarchive: zlib not found in the prefix"
	make -s -j"$JOBS" >/dev/null 2>&1 && make -s install >/dev/null 2>&1
	rm -f "$PREFIX/lib/libarchive.la"
}

build_libzstd() {
	common="ZSTD_LIB_DICTBUILDER=0 ZSTD_LIB_DEPRECATED=0 ZSTD_LEGACY_SUPPORT=0"
	# shellcheck disable=SC2086 # a list of make variables
	make -s -j"$JOBS" -C lib libzstd.a CC=musl-gcc $common \
		MOREFLAGS="-ffunction-sections -fdata-sections" >/dev/null
	mkdir -p "$PREFIX/lib" "$PREFIX/include"
	install -m 644 lib/libzstd.a "$PREFIX/lib/"
	install -m 644 lib/zstd.h lib/zstd_errors.h "$PREFIX/include/"
	# The decoder of the self-copy's stub (bootstrap/launch/stub/), which is sent to every
	# new node as it is: decompression only, no assembly, built for size.
	make -s -C lib clean >/dev/null
	# shellcheck disable=SC2086
	make -s -j"$JOBS" -C lib libzstd.a CC=musl-gcc $common ZSTD_LIB_MINIFY=1 \
		ZSTD_LIB_COMPRESSION=0 ZSTD_NO_ASM=1 MOREFLAGS="-ffunction-sections \
		-fdata-sections -fno-asynchronous-unwind-tables -DDYNAMIC_BMI2=0 -DZSTD_NO_TRACE" \
		>/dev/null
	install -m 644 lib/libzstd.a "$PREFIX/lib/libzstd-stub.a"
}

build_deps() {
	fetch_sources
	mkdir -p "$PREFIX/stamps"
	musl_ver=$(dpkg-query -W -f='${Version}' musl-dev 2>/dev/null || echo unknown)
	gcc_ver=$(gcc -dumpfullversion 2>/dev/null || gcc -dumpversion)
	for lib in $LIBS; do
		eval "v=\$ver_$lib"
		dsc=${lib}_$v.dsc
		want="$dsc COPT=$COPT musl=$musl_ver gcc=$gcc_ver recipe=2"
		if [ -f "$PREFIX/stamps/$lib" ] && [ "$(cat "$PREFIX/stamps/$lib")" = "$want" ]; then
			continue
		fi
		say "building $lib ($v)"
		t0=$(date +%s)
		unpack "$lib" "$dsc"
		(cd "$BLD/$lib" && "build_$lib") || die "building $lib failed"
		rm -rf "${BLD:?}/$lib"
		echo "$want" >"$PREFIX/stamps/$lib"
		say "built $lib in $(($(date +%s) - t0)) s"
		# libarchive links zlib: a new zlib means a new libarchive.
		[ "$lib" = zlib ] && rm -f "$PREFIX/stamps/libarchive"
	done
	{
		echo "compiler: musl-gcc over gcc $gcc_ver"
		echo "musl: $musl_ver"
		echo "COPT: $COPT"
		for lib in $LIBS; do eval "echo \"$lib: \$ver_$lib\$note_$lib\""; done
	} >"$PREFIX/BUILD-INFO.new" && mv "$PREFIX/BUILD-INFO.new" "$PREFIX/BUILD-INFO"
}

build_deps
[ $only_deps = 1 ] && exit 0
make -C "$top" -j"$JOBS"
