# Real SSH test nodes for skiff's integration tests (see docs/testing.md).
#
# Sourced by tests/t/*.sh after lib.sh (it also works on its own, for manual use):
#
#   . "$(dirname "$0")/lib.sh"
#   . "$SRC_DIR/tests/lib/nodes.sh"
#   nodes_require_root
#   test_cleanup_hook() { nodes_down; }
#   test_expect_success 'three nodes' 'nodes_up 3 --busybox 2'
#   test_expect_success 'tn1 answers' 'test "$(nodes_ssh 1 hostname)" = tn1'
#
# Each node tnI is an sshd in its own network namespace (10.200.0.(10+I) on a bridge
# whose host side is 10.200.0.1) and in its own PID, mount and UTS namespaces (hostname
# tnI, a private $HOME for the test user, sshd is PID 1: killing it kills the node). A
# node given with --busybox lands its user in a busybox-only chroot (no libc, no bash).
#
# Functions:
#   nodes_require_root              skip the script unless root (fail in CI)
#   nodes_install_deps              apt-get install what is missing (root only)
#   nodes_up N [--busybox K]...     start tn1..tnN and wait until each answers ssh
#   nodes_down                      stop and delete everything; safe to call again
#   nodes_partition I / nodes_heal I   take node I's link down / up
#   nodes_kill I                    kill node I's sshd and everything in its PID ns
#   nodes_restart I                 start a killed node again and wait for it
#   nodes_ip I                      print node I's address
#   nodes_ssh I CMD...              ssh to tnI as its test user (CMD is a remote shell line)
#   nodes_netns I, nodes_veth I     the names of node I's netns and host-side veth
#
# Variables (set and exported when this file is sourced, so they are right in subshells
# such as test bodies too): NODES_DIR, NODES_SSH_CONFIG, NODES_POOL_FILE, NODES_POOL,
# NODES_KEY, NODES_USER, NODES_BB_USER, NODES_ID, NODES_BRIDGE, NODES_NET, NODES_SUBNET;
# NODES_N after nodes_up (also in $NODES_DIR/n).
#
# Isolation: tests may only use 10.200.0.0/24, so there is one test network per host. A
# lock (flock on $NODES_LOCK) gives it to one nodes_up..nodes_down at a time; a second
# script waits (up to NODES_LOCK_TIMEOUT seconds) for it. The lock is held by a small
# watchdog process, which also tears everything down if the script dies without calling
# nodes_down. Names carry the script's pid (bridge skbr<pid>, netns skn<pid>-tnI, veth
# skv<pid>-I, dir skn.<pid>), so leftovers say whose they are; whatever a dead holder
# left is reclaimed by the next nodes_up, which holds the lock and so owns those names.
#
# All state lives on disk under $NODES_DIR, so any function works from any subshell,
# and nodes_up may run inside a test body.

NODES_NET=10.200.0
NODES_SUBNET=10.200.0.0/24
NODES_ID=$$
NODES_POOL=sktest
NODES_USER=sktest
NODES_BB_USER=sktestbb
NODES_BRIDGE=skbr$NODES_ID
# A ControlPath socket (+ a 17-byte temporary suffix) must fit in 108 bytes: keep it short.
_nodes_tmp=${TMPDIR:-/tmp}
[ "${#_nodes_tmp}" -le 30 ] || _nodes_tmp=/tmp
NODES_DIR=$_nodes_tmp/skn.$NODES_ID
NODES_SSH_CONFIG=$NODES_DIR/ssh_config
NODES_POOL_FILE=$NODES_DIR/ssh_node_pools.yaml
NODES_KEY=$NODES_DIR/id_ed25519
if [ -z "${NODES_LOCK:-}" ]; then
	NODES_LOCK=/tmp/skiff-testnodes.lock
	[ ! -d /run/lock ] || NODES_LOCK=/run/lock/skiff-testnodes.lock
fi
NODES_LOCK_TIMEOUT=${NODES_LOCK_TIMEOUT:-900}
NODES_READY_TIMEOUT=${NODES_READY_TIMEOUT:-60}
NODES_CONNECT_TIMEOUT=10
NODES_SSHD=${NODES_SSHD:-/usr/sbin/sshd}
export NODES_NET NODES_SUBNET NODES_ID NODES_POOL NODES_USER NODES_BB_USER NODES_BRIDGE \
	NODES_DIR NODES_SSH_CONFIG NODES_POOL_FILE NODES_KEY NODES_LOCK

# The GECOS field marks the users this library creates; only those are ever changed or deleted.
_nodes_gecos="skiff test node user"
_nodes_pkgs="openssh-server openssh-client busybox-static iproute2 util-linux procps iptables rsync"
. "${SRC_DIR:?tests/lib/nodes.sh: set SRC_DIR to the source tree first}/tests/lib/packages.sh"

_nodes_say() { printf 'nodes: %s\n' "$*" >&2; }
_nodes_err() { printf 'nodes: error: %s\n' "$*" >&2; return 1; }

# _nodes_run WHAT CMD...: run an external command; on failure say what failed and why.
_nodes_run() {
	_nr_what=$1
	shift
	_nr_out=$("$@" 2>&1) && return 0
	_nr_rc=$?
	_nodes_err "$_nr_what: '$*' exited $_nr_rc${_nr_out:+: $(printf '%s' "$_nr_out" | tr '\n' ' ')}"
}

_nodes_now() { date +%s.%N; }
_nodes_since() { awk -v a="$1" -v b="$(_nodes_now)" 'BEGIN { printf "%.2f", b - a }'; }

_nodes_isnum() {
	case $1 in '' | 0* | *[!0-9]*) return 1 ;; esac
	[ "$1" -ge 1 ] 2>/dev/null
}

# _nodes_starttime PID: print the process's start time (field 22 of /proc/PID/stat);
# fail if it is gone or a zombie. Pid plus start time names a process; a pid alone doesn't.
_nodes_starttime() {
	{ read -r _ns_stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	_ns_stat=${_ns_stat##*) }
	# shellcheck disable=SC2086
	set -- $_ns_stat
	case $1 in Z | X | x) return 1 ;; esac
	shift 19
	printf '%s\n' "$1"
}

# _nodes_alive PID [START]: the process runs (and, given START, is that same process).
_nodes_alive() {
	_na_st=$(_nodes_starttime "$1") || return 1
	[ -z "${2:-}" ] || [ "$_na_st" = "$2" ]
}

# _nodes_wait_dead PID [START] [TENTHS]: poll every 0.1 s until the process is gone.
_nodes_wait_dead() {
	_nw_n=${3:-50}
	while _nodes_alive "$1" "${2:-}"; do
		[ "$_nw_n" -gt 0 ] || return 1
		_nw_n=$((_nw_n - 1))
		sleep 0.1
	done
}

# _nodes_pidfile_write FILE PID: record "PID STARTTIME".
_nodes_pidfile_write() {
	_npw_st=$(_nodes_starttime "$2") || _npw_st=0
	printf '%s %s\n' "$2" "$_npw_st" >"$1"
}

_nodes_check_index() {
	_nodes_isnum "${1:-}" || { _nodes_err "bad node number '${1:-}'"; return 1; }
	[ -d "$NODES_DIR/tn$1" ] || { _nodes_err "no node tn$1 (nodes are not up, or fewer)"; return 1; }
}

nodes_netns() { printf 'skn%s-tn%s\n' "$NODES_ID" "$1"; }
nodes_veth() { printf 'skv%s-%s\n' "$NODES_ID" "$1"; }
nodes_ip() {
	_nodes_isnum "${1:-}" || { _nodes_err "nodes_ip: bad node number '${1:-}'"; return 1; }
	printf '%s.%s\n' "$NODES_NET" $((10 + $1))
}

nodes_ssh() {
	_nodes_isnum "${1:-}" || { _nodes_err "nodes_ssh: bad node number '${1:-}'"; return 1; }
	_nsh_i=$1
	shift
	ssh -F "$NODES_SSH_CONFIG" "tn$_nsh_i" "$@"
}

# ---------------------------------------------------------------------------------------
# Root and packages

nodes_require_root() {
	[ "$(id -u)" = 0 ] && return 0
	if command -v test_skip_all >/dev/null 2>&1; then
		test_skip_all "needs root (network namespaces, sshd, useradd)"
	fi
	if [ "${CI:-}" = true ]; then
		echo "Bail out! the test nodes need root, and CI must not skip them"
		exit 1
	fi
	_nodes_err "the test nodes need root"
}


# Install the packages the nodes need. Quiet and quick when nothing is missing. Serialised
# by a lock (two test scripts may get here at once), and no service is started: a
# policy-rc.d stops openssh-server's postinst from starting a host sshd on port 22.
nodes_install_deps() {
	# shellcheck disable=SC2086 # a list of names
	pkg_install $_nodes_pkgs
}

_nodes_check_tools() {
	_nct_missing=
	for _nct_c in ip unshare flock pgrep ssh ssh-keygen useradd usermod userdel getent \
		timeout hostname mount mknod perl awk dpkg-query; do
		command -v "$_nct_c" >/dev/null 2>&1 || _nct_missing="$_nct_missing $_nct_c"
	done
	[ -x "$NODES_SSHD" ] || _nct_missing="$_nct_missing $NODES_SSHD"
	[ -x /bin/busybox ] || _nct_missing="$_nct_missing /bin/busybox"
	[ -z "$_nct_missing" ] || { _nodes_err "missing tools:$_nct_missing"; return 1; }
}

# ---------------------------------------------------------------------------------------
# The network lock and the watchdog

# Runs in the background for the lifetime of the nodes: takes the lock (fd 9 stays open in
# this process only), then watches the script that sourced this library. If that script
# exits without nodes_down, it tears the nodes down itself, then exits, which frees the lock.
_nodes_watchdog() {
	trap '' HUP INT TERM QUIT PIPE
	exec 9>>"$NODES_LOCK" || { echo failed >"$NODES_DIR/lock.state"; exit 1; }
	if ! flock -n 9; then
		echo waiting >"$NODES_DIR/lock.state"
		if ! flock -w "$NODES_LOCK_TIMEOUT" 9; then
			echo timeout >"$NODES_DIR/lock.state"
			exit 1
		fi
	fi
	printf 'pid %s (%s), dir %s, since %s\n' "$NODES_ID" "${test_name:-$0}" "$NODES_DIR" \
		"$(date '+%F %T')" >"$NODES_LOCK"
	echo held >"$NODES_DIR/lock.state"
	while _nodes_alive "$NODES_ID" "$_nodes_owner_start"; do
		sleep 0.5 9>&-
	done
	echo "$(date '+%F %T') pid $NODES_ID exited without nodes_down; tearing down"
	_nodes_teardown watchdog
	exit 0
}

_nodes_lock_acquire() {
	_nodes_owner_start=$(_nodes_starttime "$NODES_ID") ||
		{ _nodes_err "cannot read /proc/$NODES_ID/stat"; return 1; }
	: >>"$NODES_LOCK" 2>/dev/null ||
		{ _nodes_err "cannot open the lock file $NODES_LOCK"; return 1; }
	_nodes_watchdog </dev/null >>"$NODES_DIR/watchdog.log" 2>&1 &
	_nla_pid=$!
	_nodes_pidfile_write "$NODES_DIR/watchdog.pid" "$_nla_pid"
	_nla_said=
	while :; do
		_nla_state=$(cat "$NODES_DIR/lock.state" 2>/dev/null)
		case $_nla_state in
		held) return 0 ;;
		waiting)
			if [ -z "$_nla_said" ]; then
				_nodes_say "waiting up to ${NODES_LOCK_TIMEOUT}s for the test network" \
					"$NODES_SUBNET, held by $(cat "$NODES_LOCK" 2>/dev/null)"
				_nla_said=1
			fi
			;;
		esac
		if ! _nodes_alive "$_nla_pid"; then
			case $_nla_state in
			timeout)
				_nodes_err "timed out after ${NODES_LOCK_TIMEOUT}s waiting for $NODES_LOCK," \
					"held by $(cat "$NODES_LOCK" 2>/dev/null)"
				;;
			*) _nodes_err "the lock watchdog died ($(cat "$NODES_DIR/watchdog.log" 2>/dev/null))" ;;
			esac
			return 1
		fi
		sleep 0.1
	done
}

# The lock holder owns every name of this library's scheme: what exists now was left by a
# script that died without tearing down (and whose watchdog was killed too). Reclaim it.
_nodes_reclaim_stale() {
	for _nrs_ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		case $_nrs_ns in
		skn[0-9]*-tn[0-9]*)
			_nodes_say "reclaiming stale netns $_nrs_ns"
			_nrs_pids=$(ip netns pids "$_nrs_ns" 2>/dev/null)
			# shellcheck disable=SC2086
			[ -z "$_nrs_pids" ] || kill -KILL $_nrs_pids 2>/dev/null
			ip netns del "$_nrs_ns" 2>/dev/null
			;;
		esac
	done
	for _nrs_l in $(_nodes_links); do
		case $_nrs_l in
		skv[0-9]*-[0-9]* | skbr[0-9]*)
			_nodes_say "reclaiming stale link $_nrs_l"
			ip link del "$_nrs_l" 2>/dev/null
			;;
		esac
	done
	for _nrs_u in "$NODES_USER" "$NODES_BB_USER"; do
		case $(getent passwd "$_nrs_u") in
		*":$_nodes_gecos:"*)
			_nodes_say "reclaiming stale user $_nrs_u"
			_nrs_p=$(pgrep -u "$_nrs_u")
			# shellcheck disable=SC2086
			[ -z "$_nrs_p" ] || kill -KILL $_nrs_p 2>/dev/null
			for _nrs_x in $_nrs_p; do _nodes_wait_dead "$_nrs_x" "" 30; done
			_nrs_o=$(userdel "$_nrs_u" 2>&1) || _nodes_say "warning: userdel $_nrs_u: $_nrs_o"
			;;
		esac
	done
	return 0
}

_nodes_links() {
	ip -o link show 2>/dev/null | sed -n 's/^[0-9]*: \([^:@]*\)[:@].*/\1/p'
}

_nodes_check_subnet_free() {
	_ncs=$(ip -o -4 addr show to "$NODES_SUBNET" 2>&1) ||
		{ _nodes_err "ip addr show failed: $_ncs"; return 1; }
	[ -z "$_ncs" ] || { _nodes_err "$NODES_SUBNET is in use on this host: $_ncs"; return 1; }
	# Routes inside the subnet, and routes that cover it (except the default route).
	_ncs=$(ip -4 route show root "$NODES_SUBNET" 2>&1
		ip -4 route show match "$NODES_SUBNET" 2>&1 | grep -v '^default')
	[ -z "$_ncs" ] || { _nodes_err "$NODES_SUBNET is routed on this host: $_ncs"; return 1; }
}

# ---------------------------------------------------------------------------------------
# Users

# _nodes_user_ensure NAME HOME: create the user (login shell /bin/sh, password '*', which
# means no password but not locked: with UsePAM no, sshd refuses a locked '!' account).
# An existing user is only adopted if this library made it (GECOS marker).
_nodes_user_ensure() {
	if _nue=$(getent passwd "$1"); then
		case $_nue in
		*":$_nodes_gecos:"*) ;;
		*)
			_nodes_err "user $1 exists and was not made by this library; refusing to change it"
			return 1
			;;
		esac
		_nodes_run "adopt user $1" usermod -d "$2" -s /bin/sh -p '*' "$1" || return 1
	else
		_nodes_run "create user $1" useradd -M -d "$2" -s /bin/sh -c "$_nodes_gecos" "$1" || return 1
		_nodes_run "unlock user $1" usermod -p '*' "$1" || return 1
	fi
	printf '%s\n' "$1" >>"$NODES_DIR/users"
}

# ---------------------------------------------------------------------------------------
# Files

# The busybox image: /bin/busybox and a symlink per applet, passwd/group, three device
# nodes, /tmp 1777, an empty /proc. No /lib, no libc, no bash, no python.
_nodes_build_bbimg() {
	_nbb=$1
	if ! _nbb_uid=$(id -u "$NODES_BB_USER") || ! _nbb_gid=$(id -g "$NODES_BB_USER"); then
		_nodes_err "cannot get the uid of $NODES_BB_USER"
		return 1
	fi
	_nodes_run "busybox image: dirs" mkdir -p "$_nbb/bin" "$_nbb/sbin" "$_nbb/usr/bin" \
		"$_nbb/usr/sbin" "$_nbb/etc" "$_nbb/dev" "$_nbb/tmp" "$_nbb/proc" "$_nbb/root" \
		"$_nbb/opt" "$_nbb/home/$NODES_BB_USER" || return 1
	_nodes_run "busybox image: copy /bin/busybox" cp /bin/busybox "$_nbb/bin/busybox" || return 1
	# One process for ~400 links (a loop of ln costs 0.5 s on a small VM).
	_nbb_out=$(/bin/busybox --list-full | perl -e '
		chdir $ARGV[0] or die "chdir $ARGV[0]: $!\n";
		while (<STDIN>) {
			chomp;
			next if $_ eq "" || -e $_ || -l $_;
			symlink("/bin/busybox", $_) or die "symlink $_: $!\n";
		}' "$_nbb" 2>&1) || { _nodes_err "busybox image: applet links: $_nbb_out"; return 1; }
	[ -L "$_nbb/bin/sh" ] ||
		{ _nodes_err "busybox image: no /bin/sh applet in /bin/busybox"; return 1; }
	if ! printf 'root:x:0:0:root:/root:/bin/sh\n%s:x:%s:%s::/home/%s:/bin/sh\n' \
		"$NODES_BB_USER" "$_nbb_uid" "$_nbb_gid" "$NODES_BB_USER" >"$_nbb/etc/passwd" ||
		! printf 'root:x:0:\n%s:x:%s:\n' "$NODES_BB_USER" "$_nbb_gid" >"$_nbb/etc/group"; then
		_nodes_err "busybox image: cannot write /etc/passwd"
		return 1
	fi
	_nodes_run "busybox image: mknod" mknod -m 666 "$_nbb/dev/null" c 1 3 || return 1
	_nodes_run "busybox image: mknod" mknod -m 666 "$_nbb/dev/zero" c 1 5 || return 1
	_nodes_run "busybox image: mknod" mknod -m 666 "$_nbb/dev/urandom" c 1 9 || return 1
	# sshd refuses a ChrootDirectory with a component not root-owned or group/world-writable.
	_nodes_run "busybox image: modes" chmod 755 "$_nbb" "$_nbb/bin" "$_nbb/etc" "$_nbb/dev" || return 1
	_nodes_run "busybox image: modes" chmod 1777 "$_nbb/tmp" || return 1
	_nodes_run "busybox image: modes" chmod 700 "$_nbb/root" || return 1
	_nodes_run "busybox image: owner" chown "$_nbb_uid:$_nbb_gid" \
		"$_nbb/home/$NODES_BB_USER" "$_nbb/opt" || return 1
}

# _nodes_write_node I BB: the node's dir, host key, sshd_config and start script.
_nodes_write_node() {
	_nwn_i=$1
	_nwn_d=$NODES_DIR/tn$1
	_nodes_run "tn$1: dirs" mkdir -p "$_nwn_d/home" || return 1
	_nodes_run "tn$1: home owner" chown "$NODES_USER:" "$_nwn_d/home" || return 1
	_nodes_run "tn$1: host key" ssh-keygen -q -t ed25519 -N '' -C "tn$1" \
		-f "$_nwn_d/ssh_host_ed25519_key" || return 1
	_nwn_users=$NODES_USER
	[ "$2" = 0 ] || _nwn_users="$NODES_USER $NODES_BB_USER"
	{
		echo "# tn$1, written by tests/lib/nodes.sh"
		echo "Port 22"
		echo "ListenAddress $(nodes_ip "$1")"
		echo "HostKey $_nwn_d/ssh_host_ed25519_key"
		echo "# sshd is PID 1 of its PID namespace: a pid file would say 1"
		echo "PidFile none"
		echo "AuthorizedKeysFile $NODES_DIR/authorized_keys"
		echo "AllowUsers $_nwn_users"
		echo "PermitRootLogin no"
		echo "PubkeyAuthentication yes"
		echo "PasswordAuthentication no"
		echo "KbdInteractiveAuthentication no"
		echo "UsePAM no"
		echo "# the keys live under a world-writable temp dir"
		echo "StrictModes no"
		echo "UseDNS no"
		echo "PrintMotd no"
		echo "PrintLastLog no"
		echo "X11Forwarding no"
		echo "Subsystem sftp internal-sftp"
		echo "MaxStartups 100:30:200"
		echo "MaxSessions 100"
		if [ "$2" != 0 ]; then
			echo "# the busybox image is bind-mounted on /srv in this node's mount namespace"
			echo "Match User $NODES_BB_USER"
			echo "  ChrootDirectory /srv"
		fi
	} >"$_nwn_d/sshd_config" || { _nodes_err "tn$1: cannot write sshd_config"; return 1; }
	_nodes_run "tn$1: sshd -t" "$NODES_SSHD" -t -f "$_nwn_d/sshd_config" || return 1
	{
		echo "# tn$1: runs as PID 1 of the node's PID namespace, in its own mount and UTS"
		echo "# namespaces, inside the node's network namespace. Then it becomes sshd."
		echo "set -e"
		echo "hostname tn$1"
		echo "mount -t proc proc /proc"
		echo "mount --bind $_nwn_d/home $NODES_DIR/home"
		if [ "$2" != 0 ]; then
			echo "mount --bind $_nwn_d/rootfs /srv"
			echo "mount -t proc proc /srv/proc"
		fi
		echo "exec $NODES_SSHD -D -f $_nwn_d/sshd_config -E $_nwn_d/sshd.log"
	} >"$_nwn_d/start.sh" || { _nodes_err "tn$1: cannot write start.sh"; return 1; }
	if [ "$2" != 0 ]; then
		_nodes_run "tn$1: copy the busybox image" cp -a "$NODES_DIR/bbimg" "$_nwn_d/rootfs" || return 1
	fi
}

_nodes_write_client_files() {
	_nwc_n=$1
	_nwc_bb=$2
	{
		echo "# Test nodes, written by tests/lib/nodes.sh. Use: ssh -F $NODES_SSH_CONFIG tn1 CMD"
		_nwc_i=1
		while [ "$_nwc_i" -le "$_nwc_n" ]; do
			_nwc_u=$NODES_USER
			case " $_nwc_bb " in *" $_nwc_i "*) _nwc_u=$NODES_BB_USER ;; esac
			echo "Host tn$_nwc_i $(nodes_ip "$_nwc_i")"
			echo "  HostName $(nodes_ip "$_nwc_i")"
			echo "  User $_nwc_u"
			_nwc_i=$((_nwc_i + 1))
		done
		echo "Host *"
		echo "  User $NODES_USER"
		echo "  Port 22"
		echo "  IdentityFile $NODES_KEY"
		echo "  IdentitiesOnly yes"
		echo "  BatchMode yes"
		echo "  StrictHostKeyChecking no"
		echo "  UserKnownHostsFile /dev/null"
		echo "  LogLevel ERROR"
		echo "  ConnectTimeout 5"
		echo "  # a master on a partitioned node hangs forever without these"
		echo "  ServerAliveInterval 1"
		echo "  ServerAliveCountMax 3"
		echo "  # the post-quantum default costs ~110 ms of CPU per connection"
		echo "  KexAlgorithms curve25519-sha256"
		echo "  # the cipher skiff's own ssh prefers (SSH_CIPHERS): a peer such as the"
		echo "  # benchmarks' rsync runs over what skiff's connections run over"
		echo "  Ciphers ^aes128-gcm@openssh.com"
		echo "  ControlMaster auto"
		echo "  ControlPath $NODES_DIR/cm-%C"
		echo "  ControlPersist 60"
	} >"$NODES_SSH_CONFIG" || { _nodes_err "cannot write $NODES_SSH_CONFIG"; return 1; }
	# SkyPilot's ~/.sky/ssh_node_pools.yaml format: pool name -> defaults + hosts.
	{
		echo "# Test nodes, written by tests/lib/nodes.sh (SkyPilot ssh_node_pools.yaml format)."
		echo "$NODES_POOL:"
		echo "  user: $NODES_USER"
		echo "  identity_file: $NODES_KEY"
		echo "  hosts:"
		_nwc_i=1
		while [ "$_nwc_i" -le "$_nwc_n" ]; do
			_nwc_u=$NODES_USER
			case " $_nwc_bb " in *" $_nwc_i "*) _nwc_u=$NODES_BB_USER ;; esac
			echo "    - ip: $(nodes_ip "$_nwc_i")"
			echo "      user: $_nwc_u"
			echo "      identity_file: $NODES_KEY"
			echo "      port: 22"
			_nwc_i=$((_nwc_i + 1))
		done
	} >"$NODES_POOL_FILE" || { _nodes_err "cannot write $NODES_POOL_FILE"; return 1; }
}

# ---------------------------------------------------------------------------------------
# Nodes

_nodes_net_node() {
	_nnn_ns=$(nodes_netns "$1")
	_nnn_v=$(nodes_veth "$1")
	_nodes_run "tn$1: add netns" ip netns add "$_nnn_ns" || return 1
	_nodes_run "tn$1: add veth" \
		ip link add "$_nnn_v" type veth peer name eth0 netns "$_nnn_ns" || return 1
	_nodes_run "tn$1: attach veth" ip link set "$_nnn_v" master "$NODES_BRIDGE" up || return 1
	_nodes_run "tn$1: address" ip -n "$_nnn_ns" addr add "$(nodes_ip "$1")/24" dev eth0 || return 1
	_nodes_run "tn$1: eth0 up" ip -n "$_nnn_ns" link set eth0 up || return 1
	_nodes_run "tn$1: lo up" ip -n "$_nnn_ns" link set lo up || return 1
}

# Start node I's sshd in its namespaces (not waiting for it).
_nodes_start_node() {
	_nsn_d=$NODES_DIR/tn$1
	# ip netns exec execs unshare, so $! is unshare's pid. unshare --fork ignores SIGTERM;
	# its child (sshd, PID 1 of the node) is killed when unshare dies (--kill-child).
	ip netns exec "$(nodes_netns "$1")" unshare --uts --mount --pid --fork --kill-child=SIGKILL \
		--propagation private sh "$_nsn_d/start.sh" </dev/null >>"$_nsn_d/start.log" 2>&1 &
	_nodes_pidfile_write "$_nsn_d/unshare.pid" $!
}

_nodes_node_diag() {
	_nnd_d=$NODES_DIR/tn$1
	for _nnd_f in "$_nnd_d/start.log" "$_nnd_d/sshd.log"; do
		[ -s "$_nnd_f" ] || continue
		echo "nodes:   last lines of $_nnd_f:"
		tail -n 8 "$_nnd_f" | sed 's/^/nodes:     /'
	done >&2
}

# Poll `ssh tnI true` every 0.1 s until it works (this also opens the ControlMaster). Each
# try may take NODES_CONNECT_TIMEOUT: on a loaded machine sshd's banner came later than 2 s
# on every try for 30 s once, and the node was never ready.
_nodes_wait_ready() {
	_nwr_end=$(($(date +%s) + NODES_READY_TIMEOUT))
	read -r _nwr_pid _nwr_st <"$NODES_DIR/tn$1/unshare.pid" || return 1
	_nwr_err=$NODES_DIR/tn$1/ready.err
	while ! ssh -F "$NODES_SSH_CONFIG" -o ConnectTimeout="$NODES_CONNECT_TIMEOUT" "tn$1" true \
		2>"$_nwr_err" </dev/null; do
		if ! _nodes_alive "$_nwr_pid" "$_nwr_st"; then
			_nodes_err "tn$1: the node's sshd exited"
			_nodes_node_diag "$1"
			return 1
		fi
		if [ "$(date +%s)" -ge "$_nwr_end" ]; then
			_nodes_err "tn$1: ssh did not work within ${NODES_READY_TIMEOUT}s:" \
				"$(tr '\n' ' ' <"$_nwr_err")"
			_nodes_node_diag "$1"
			return 1
		fi
		sleep 0.1
	done
	_nwr_c=$(pgrep -P "$_nwr_pid" | head -n 1)
	[ -z "$_nwr_c" ] || _nodes_pidfile_write "$NODES_DIR/tn$1/sshd.pid" "$_nwr_c"
}

# Kill node I (sshd is PID 1 of the node: the kernel kills the rest of its PID namespace).
_nodes_stop_node() {
	_nsd_f=$NODES_DIR/tn$1/unshare.pid
	[ -f "$_nsd_f" ] || return 0
	read -r _nsd_pid _nsd_st <"$_nsd_f" || return 0
	if _nodes_alive "$_nsd_pid" "$_nsd_st"; then
		for _nsd_c in $(pgrep -P "$_nsd_pid"); do
			kill -KILL "$_nsd_c" 2>/dev/null
		done
		if ! _nodes_wait_dead "$_nsd_pid" "$_nsd_st" 50; then
			kill -KILL "$_nsd_pid" 2>/dev/null
			_nodes_wait_dead "$_nsd_pid" "$_nsd_st" 50 ||
				{ _nodes_err "tn$1: unshare (pid $_nsd_pid) does not die"; return 1; }
		fi
	fi
	rm -f "$_nsd_f" "$NODES_DIR/tn$1/sshd.pid"
}

_nodes_up() {
	_nu_n=${1:-}
	if ! _nodes_isnum "$_nu_n" || [ "$_nu_n" -gt 200 ]; then
		_nodes_err "usage: nodes_up N [--busybox K]... (1 <= N <= 200)"
		return 2
	fi
	shift
	_nu_bb=
	while [ $# -gt 0 ]; do
		case $1 in
		--busybox)
			if ! _nodes_isnum "${2:-}" || [ "$2" -gt "$_nu_n" ]; then
				_nodes_err "nodes_up: --busybox needs a node number in 1..$_nu_n"
				return 2
			fi
			_nu_bb="$_nu_bb $2"
			shift 2
			;;
		*) _nodes_err "nodes_up: unknown argument '$1'"; return 2 ;;
		esac
	done
	[ "$(id -u)" = 0 ] || { _nodes_err "nodes_up needs root"; return 2; }
	case $NODES_DIR in
	*[!A-Za-z0-9/._-]*)
		_nodes_err "NODES_DIR '$NODES_DIR' has characters config files cannot hold; set TMPDIR"
		return 2
		;;
	esac
	_nu_w=
	_nu_ws=
	[ ! -f "$NODES_DIR/watchdog.pid" ] || read -r _nu_w _nu_ws <"$NODES_DIR/watchdog.pid"
	if [ -e "$NODES_DIR/up" ] || { [ -n "$_nu_w" ] && _nodes_alive "$_nu_w" "$_nu_ws"; }; then
		_nodes_err "nodes are already up in $NODES_DIR (call nodes_down first)"
		return 2
	fi
	_nodes_check_tools 2>/dev/null || nodes_install_deps || return 2
	_nodes_check_tools || return 2

	_nu_t0=$(_nodes_now)
	rm -rf "$NODES_DIR"
	# Readable by all: sshd reads authorized_keys as the user; the user's home is under it.
	_nodes_run "create $NODES_DIR" mkdir -m 755 "$NODES_DIR" || return 2
	_nodes_run "create $NODES_DIR/home" mkdir -m 755 "$NODES_DIR/home" || return 1

	_nodes_lock_acquire || return 1
	_nu_tl=$(_nodes_now)
	_nodes_reclaim_stale
	_nodes_check_subnet_free || return 1

	_nodes_user_ensure "$NODES_USER" "$NODES_DIR/home" || return 1
	if [ -n "$_nu_bb" ]; then
		_nodes_user_ensure "$NODES_BB_USER" "/home/$NODES_BB_USER" || return 1
		# ChrootDirectory /srv (bind mount inside the node): / and /srv must be root-owned.
		[ -d /srv ] || _nodes_run "create /srv" mkdir -m 755 /srv || return 1
		_nodes_build_bbimg "$NODES_DIR/bbimg" || return 1
	fi
	# sshd's privilege-separation dir (sshd -t fails without it). Shared; left in place.
	_nodes_run "create /run/sshd" mkdir -p /run/sshd || return 1
	_nodes_run "chmod /run/sshd" chmod 755 /run/sshd || return 1
	_nodes_run "client key" \
		ssh-keygen -q -t ed25519 -N '' -C "skiff-testnodes" -f "$NODES_KEY" || return 1
	_nodes_run "authorized_keys" cp "$NODES_KEY.pub" "$NODES_DIR/authorized_keys" || return 1
	chmod 644 "$NODES_DIR/authorized_keys"
	_nodes_write_client_files "$_nu_n" "$_nu_bb" || return 1
	echo "$_nu_n" >"$NODES_DIR/n"
	echo "$_nu_bb" >"$NODES_DIR/busybox"
	_nu_i=1
	while [ "$_nu_i" -le "$_nu_n" ]; do
		_nu_isbb=0
		case " $_nu_bb " in *" $_nu_i "*) _nu_isbb=1 ;; esac
		_nodes_write_node "$_nu_i" "$_nu_isbb" || return 1
		_nu_i=$((_nu_i + 1))
	done

	_nodes_run "bridge" ip link add "$NODES_BRIDGE" type bridge || return 1
	_nodes_run "bridge address" ip addr add "$NODES_NET.1/24" dev "$NODES_BRIDGE" || return 1
	_nodes_run "bridge up" ip link set "$NODES_BRIDGE" up || return 1
	_nu_i=1
	while [ "$_nu_i" -le "$_nu_n" ]; do
		_nodes_net_node "$_nu_i" || return 1
		_nodes_start_node "$_nu_i"
		_nu_i=$((_nu_i + 1))
	done
	# Wait for all of them at once.
	_nu_i=1
	_nu_waits=
	while [ "$_nu_i" -le "$_nu_n" ]; do
		_nodes_wait_ready "$_nu_i" &
		_nu_waits="$_nu_waits $!"
		_nu_i=$((_nu_i + 1))
	done
	_nu_ok=1
	for _nu_w in $_nu_waits; do
		wait "$_nu_w" || _nu_ok=
	done
	[ -n "$_nu_ok" ] || return 1
	: >"$NODES_DIR/up"
	NODES_N=$_nu_n
	export NODES_N
	_nodes_say "$_nu_n node(s) up in $(_nodes_since "$_nu_t0")s" \
		"($(_nodes_since "$_nu_tl")s after the lock)${_nu_bb:+, busybox:$_nu_bb}"
}

# nodes_up N [--busybox K]...: start nodes tn1..tnN; on failure, tear down what was started.
nodes_up() {
	_nodes_up "$@"
	case $? in
	0) return 0 ;;
	2) return 1 ;;
	esac
	_nodes_err "nodes_up failed; tearing down what it started"
	_nodes_teardown down || true
	return 1
}

nodes_partition() {
	_nodes_check_index "${1:-}" || return 1
	_nodes_run "partition tn$1" ip link set "$(nodes_veth "$1")" down
}

nodes_heal() {
	_nodes_check_index "${1:-}" || return 1
	_nodes_run "heal tn$1" ip link set "$(nodes_veth "$1")" up
}

nodes_kill() {
	_nodes_check_index "${1:-}" || return 1
	_nodes_stop_node "$1"
}

nodes_restart() {
	_nodes_check_index "${1:-}" || return 1
	_nodes_stop_node "$1" || return 1
	_nodes_start_node "$1"
	_nodes_wait_ready "$1"
}

# ---------------------------------------------------------------------------------------
# Teardown

# Our processes that outlive their node: ssh clients and ControlMasters (and any sshd)
# whose command line names $NODES_DIR. Prints "pid" lines.
_nodes_strays() {
	for _nst_p in /proc/[0-9]*; do
		{ read -r _nst_c <"$_nst_p/comm"; } 2>/dev/null || continue
		case $_nst_c in ssh | sshd | unshare) ;; *) continue ;; esac
		{ tr '\0' ' ' <"$_nst_p/cmdline"; } 2>/dev/null | grep -qF "$NODES_DIR/" || continue
		printf '%s\n' "${_nst_p#/proc/}"
	done
}

_nodes_our_netns() {
	ip netns list 2>/dev/null | awk -v p="skn$NODES_ID-tn" 'index($1, p) == 1 { print $1 }'
}

_nodes_our_links() {
	_nodes_links | awk -v v="skv$NODES_ID-" -v b="$NODES_BRIDGE" 'index($1, v) == 1 || $1 == b'
}

# _nodes_teardown down|watchdog: stop and delete everything; safe to repeat, and after a
# partial nodes_up. Returns 1 if something could not be removed.
_nodes_teardown() {
	_ntd_fail=0
	# The watchdog's identity, read before the dir goes away.
	_ntd_w=
	_ntd_ws=
	if [ "$1" = down ] && [ -f "$NODES_DIR/watchdog.pid" ]; then
		read -r _ntd_w _ntd_ws <"$NODES_DIR/watchdog.pid" || _ntd_w=
	fi
	# 1. ControlMasters (this works even when the node is partitioned: it's a local socket).
	for _ntd_s in "$NODES_DIR"/cm-*; do
		[ -S "$_ntd_s" ] || continue
		timeout 5 ssh -F /dev/null -o ControlPath="$_ntd_s" -O exit skn >/dev/null 2>&1
	done
	# 2. The nodes, once what their daemons logged is read (tests/t/lib.sh fails the
	# script on a BUG: line or a sanitizer report there).
	if [ "$1" = down ] && command -v test_scan_daemon_logs >/dev/null 2>&1; then
		test_scan_daemon_logs "$NODES_DIR"
	fi
	for _ntd_d in "$NODES_DIR"/tn*; do
		[ -d "$_ntd_d" ] || continue
		_nodes_stop_node "${_ntd_d##*/tn}" || _ntd_fail=1
	done
	# 3. Anything still in our namespaces, then ssh clients naming our dir.
	for _ntd_ns in $(_nodes_our_netns); do
		_ntd_p=$(ip netns pids "$_ntd_ns" 2>/dev/null)
		# shellcheck disable=SC2086
		[ -z "$_ntd_p" ] || kill -KILL $_ntd_p 2>/dev/null
	done
	_ntd_p=$(_nodes_strays)
	# shellcheck disable=SC2086
	[ -z "$_ntd_p" ] || kill -KILL $_ntd_p 2>/dev/null
	for _ntd_x in $_ntd_p; do _nodes_wait_dead "$_ntd_x" "" 30; done
	# 4. Links (deleting a veth deletes its peer at once; a netns is freed asynchronously),
	# namespaces, bridge.
	for _ntd_l in $(_nodes_our_links); do
		[ "$_ntd_l" = "$NODES_BRIDGE" ] && continue
		ip link del "$_ntd_l" 2>/dev/null || _nodes_err "cannot delete link $_ntd_l"
	done
	for _ntd_ns in $(_nodes_our_netns); do
		ip netns del "$_ntd_ns" 2>/dev/null || _nodes_err "cannot delete netns $_ntd_ns"
	done
	if _nodes_links | grep -qx "$NODES_BRIDGE"; then
		ip link del "$NODES_BRIDGE" 2>/dev/null || _nodes_err "cannot delete bridge $NODES_BRIDGE"
	fi
	# 5. Users this library made (marker in GECOS), as recorded by nodes_up.
	if [ -f "$NODES_DIR/users" ]; then
		# shellcheck disable=SC2013 # user names are words
		for _ntd_u in $(sort -u "$NODES_DIR/users"); do
			case $(getent passwd "$_ntd_u") in
			*":$_nodes_gecos:"*)
				_ntd_o=$(userdel "$_ntd_u" 2>&1) || { _nodes_err "userdel $_ntd_u: $_ntd_o"; _ntd_fail=1; }
				;;
			esac
		done
		rm -f "$NODES_DIR/users"
	fi
	# 6. Check.
	_ntd_left="$(_nodes_our_netns) $(_nodes_our_links) $(_nodes_strays)"
	# shellcheck disable=SC2086,SC2116 # squeeze the blanks
	_ntd_left=$(echo $_ntd_left)
	if [ -n "$_ntd_left" ]; then
		_nodes_err "teardown left behind: $_ntd_left"
		_ntd_fail=1
	fi
	rm -f "$NODES_DIR/up"
	# 7. The scratch dir: kept with SKIFF_TEST_KEEP, after a failed test, or when the
	# watchdog cleans up after a script that died.
	if [ -d "$NODES_DIR" ]; then
		if [ -n "${SKIFF_TEST_KEEP:-}" ] || [ "${test_failed:-0}" != 0 ] ||
			[ "$1" = watchdog ] || [ "$_ntd_fail" != 0 ]; then
			_nodes_say "kept $NODES_DIR"
		else
			rm -rf "$NODES_DIR"
		fi
	fi
	# 8. Free the lock last, so that nobody builds a network while ours is still there.
	if [ -n "$_ntd_w" ] && _nodes_alive "$_ntd_w" "$_ntd_ws"; then
		kill -KILL "$_ntd_w" 2>/dev/null
		_nodes_wait_dead "$_ntd_w" "$_ntd_ws" 50 ||
			{ _nodes_err "the lock watchdog (pid $_ntd_w) does not die"; _ntd_fail=1; }
	fi
	rm -f "$NODES_DIR/watchdog.pid" 2>/dev/null
	return $_ntd_fail
}

nodes_down() {
	_nodes_teardown down
}
