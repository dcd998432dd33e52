# The one installer of the test suite's Debian packages, all named in tests/packages.list.
# Source it (after tests/t/lib.sh or on its own), or run it:
#
#   sh tests/lib/packages.sh install GROUP...   install the groups' missing packages
#   sh tests/lib/packages.sh missing GROUP...   print them
#   sh tests/lib/packages.sh pkg PKG...         install those packages (each in the list)
#
#   pkg_install PKG...      apt-get install those of PKG that are missing; each must be in
#                           the list (a package the list does not name is refused, so that
#                           the list stays the whole truth). 0 when all are there after.
#   pkg_group GROUP...      the packages of the groups (test, fuzz, bench, dev)
#   pkg_missing PKG...      those of PKG that are not installed
#
# Installs are serialised by one lock (two test scripts may get here at once), quiet when
# nothing is missing, and start no service: a policy-rc.d stops openssh-server's or
# docker.io's postinst from starting a daemon on the host. Root only; without root the
# missing packages are named and the call fails.

PKG_LIST=${PKG_LIST:-$(cd "$(dirname "${0:-.}")" 2>/dev/null && pwd)/../packages.list}
[ -f "$PKG_LIST" ] || PKG_LIST=${SRC_DIR:-.}/tests/packages.list
# How long an install waits for another's to finish.
PKG_LOCK_WAIT_S=900
PKG_LOCK=/tmp/skiff-testnodes.lock.apt
[ ! -d /run/lock ] || PKG_LOCK=/run/lock/skiff-testnodes.lock.apt

_pkg_say() { printf 'packages: %s\n' "$*" >&2; }

pkg_group() {
	for _pg_g; do
		awk -v g="$_pg_g" '!/^[ \t]*#/ && NF >= 2 && $2 == g { print $1 }' "$PKG_LIST"
	done
}

pkg_missing() {
	[ $# -gt 0 ] || return 0
	_pm_have=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null || :)
	for _pm_p; do
		printf '%s\n' "$_pm_have" | grep -q "^ii  *$_pm_p\$" || printf '%s ' "$_pm_p"
	done
}

pkg_install() {
	for _pi_p; do
		awk -v p="$_pi_p" '!/^[ \t]*#/ && $1 == p { f = 1 } END { exit !f }' "$PKG_LIST" || {
			_pkg_say "error: $_pi_p is not in $PKG_LIST (every package the tests use is)"
			return 1
		}
	done
	_pi_m=$(pkg_missing "$@")
	[ -n "$_pi_m" ] || return 0
	if [ "$(id -u)" != 0 ]; then
		_pkg_say "error: missing packages ($_pi_m) and not root to install them"
		return 1
	fi
	command -v apt-get >/dev/null ||
		{ _pkg_say "error: missing packages ($_pi_m) and no apt-get"; return 1; }
	_pi_log=${TMPDIR:-/tmp}/skiff-packages-apt.$$.log
	(
		flock -w "$PKG_LOCK_WAIT_S" 8 || { echo "timed out waiting for $PKG_LOCK" >&2; exit 1; }
		_pi_m=$(pkg_missing "$@")
		[ -n "$_pi_m" ] || exit 0
		_pi_pol=
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\n# skiff tests: start no services while installing\nexit 101\n' \
				>/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && _pi_pol=1
		fi
		# shellcheck disable=SC2086 # a list of names
		_pi_apt() {
			DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=600 \
				-o Dpkg::Use-Pty=0 install --no-install-recommends $_pi_m
		}
		_pi_apt || { apt-get -q -o DPkg::Lock::Timeout=600 update && _pi_apt; }
		_pi_rc=$?
		[ -z "$_pi_pol" ] || rm -f /usr/sbin/policy-rc.d
		exit $_pi_rc
	) 8>>"$PKG_LOCK" >"$_pi_log" 2>&1
	_pi_rc=$?
	_pi_left=$(pkg_missing "$@")
	if [ "$_pi_rc" != 0 ] || [ -n "$_pi_left" ]; then
		_pkg_say "error: apt-get install $_pi_m failed (exit $_pi_rc); last lines of $_pi_log:"
		tail -n 15 "$_pi_log" | sed 's/^/packages:   /' >&2
		return 1
	fi
	rm -f "$_pi_log"
	_pkg_say "installed $_pi_m"
}

if [ "${0##*/}" = packages.sh ]; then
	set -eu
	cmd=${1:-}
	[ $# -ge 2 ] || { echo "usage: $0 install|missing GROUP... | pkg PKG..." >&2; exit 2; }
	shift
	# shellcheck disable=SC2046 # a list of names
	case $cmd in
	install) pkg_install $(pkg_group "$@") ;;
	pkg) pkg_install "$@" ;;
	missing) pkg_missing $(pkg_group "$@"); echo ;;
	*) echo "usage: $0 install|missing GROUP... | pkg PKG..." >&2; exit 2 ;;
	esac
fi
