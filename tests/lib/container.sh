# Shared by the container tests (t0700 podman, t0701 docker, t0702 images with their own
# Python); source after tests/t/lib.sh. The engine is $CE (podman or docker, the command).
#
#   ctr_install PKG...          apt-get install the packages that are missing (one lock,
#                               no service started); 0 when all are there after
#   busybox_rootfs DIR          a busybox-only rootfs in DIR (a link per applet, passwd and
#                               group with root, /tmp 1777; no /lib, no bash) and DIR.tar
#   ctr_debian_tar SUITE [PKGS] the path of a tarball of `debootstrap --variant=minbase
#                               [--include=PKGS] SUITE` from this machine's Debian mirror,
#                               made once and cached in /var/cache/skiff-test
#   ctr_names FILTER...         names of the containers (all states) that `ps -a` filters give
#   ctr_addr CTR                what skiff calls the node in CTR: its address on its first
#                               network, else its name (docs/infra-podman.md)
#   ctr_down_all                `skiff down` every cluster, then kill the gang watchers of
#                               this SKIFF_HOME that are left (the tests' cleanup)
#   json EXPR FILE              a Python expression over d, the JSON in FILE
#   now, secs_since T           for the timings the tests print

CTR_CACHE=/var/cache/skiff-test
# How long a test waits for another's apt-get or debootstrap to finish.
CTR_LOCK_WAIT_S=900

. "${SRC_DIR:?tests/lib/container.sh: set SRC_DIR to the source tree first}/tests/lib/packages.sh"


ctr_install() {
	pkg_install "$@"
}

busybox_rootfs() {
	_r=$1
	mkdir -p "$_r/bin" "$_r/etc" "$_r/dev" "$_r/tmp" "$_r/proc" "$_r/root" "$_r/sys" &&
		cp /bin/busybox "$_r/bin/busybox" || return 1
	for _a in $(/bin/busybox --list); do
		[ "$_a" = busybox ] || ln -s busybox "$_r/bin/$_a" || return 1
	done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$_r/etc/passwd" &&
		printf 'root:x:0:\n' >"$_r/etc/group" &&
		chmod 1777 "$_r/tmp" && chmod 700 "$_r/root" &&
		tar -C "$_r" -cf "$_r.tar" .
}

# The Debian archive this machine's apt uses (deb822 URIs: or a one-line deb entry).
ctr_debian_mirror() {
	_u=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		sed -n 's,^URIs: *\([^ ]*/debian\)/*$,\1,p; s,^deb  *\(\[[^]]*\] *\)\{0\,1\}\([^ ]*/debian\)/*  *.*,\2,p' |
		head -n 1)
	echo "${_u:-http://deb.debian.org/debian}"
}

ctr_debian_tar() {
	_suite=$1 _inc=${2:-}
	_tar=$CTR_CACHE/$_suite-minbase${_inc:++$(printf '%s' "$_inc" | tr , +)}.tar
	mkdir -p "$CTR_CACHE" || return 1
	(
		flock -w "$CTR_LOCK_WAIT_S" 8 || { echo "timed out waiting for $_tar.lock" >&2; exit 1; }
		[ ! -s "$_tar" ] || exit 0
		_d=$CTR_CACHE/$_suite.$$
		rm -rf "$_d"
		_mirror=$(ctr_debian_mirror)
		debootstrap --variant=minbase ${_inc:+--include="$_inc"} "$_suite" "$_d" "$_mirror" \
			>"$TRASH/debootstrap-$_suite.log" 2>&1 || {
			echo "debootstrap $_suite from $_mirror failed; its log ends:" >&2
			tail -n 20 "$TRASH/debootstrap-$_suite.log" >&2
			rm -rf "$_d"
			exit 1
		}
		tar -C "$_d" -cf "$_tar.$$" . && mv "$_tar.$$" "$_tar"
		_rc=$?
		rm -rf "$_d" "$_tar.$$"
		exit $_rc
	) 8>>"$_tar.lock" >&2 || return 1
	echo "$_tar"
}

ctr_names() {
	_args=
	for _f; do _args="$_args --filter $_f"; done
	# shellcheck disable=SC2086
	"$CE" ps -a $_args --format '{{.Names}}' | sort | tr '\n' ' '
}

ctr_addr() {
	_a=$("$CE" container inspect --format \
		'{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$1") || return 1
	_a=${_a%% *}
	echo "${_a:-$1}"
}

json() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(($1)))" "$2"
}
now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

ctr_down_all() {
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
	done
	for _p in $(gang_watchers); do
		kill -KILL "$_p" 2>/dev/null
	done
}
