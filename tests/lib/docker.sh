# A real Docker daemon (Debian's docker.io: dockerd, and the containerd it starts) with
# every piece of state the test's own, for the container tests: nothing depends on, or
# touches, a system docker service.
#
#   . tests/lib/docker.sh
#   docker_private DIR BRIDGE SUBNET   start dockerd with its data root in DIR, its exec root
#                                      and socket in /run/skiff-test-docker/BRIDGE, containers
#                                      on bridge BRIDGE (made here, gateway .1 of SUBNET, a /24
#                                      such as 10.213.1, or the next one free: DOCKER_NET);
#                                      export DOCKER_HOST and DOCKER_CONFIG
#   docker_private_down DIR            remove every container, stop dockerd and containerd
#                                      (their shims too), unmount, remove the state, the
#                                      bridge, the cgroups, and the host paths dockerd made
#                                      that were not there
#
# No iptables rules, no ip_forward, no NAT: the containers reach each other on the bridge
# and nothing else (there is no registry to reach anyway). A bridge of our own, not
# docker0, so that two tests may run daemons at once; each has its own containerd
# namespace and cgroup parent too.

# How long dockerd may take to answer after it starts, and to exit after SIGTERM.
DOCKER_START_S=60
DOCKER_STOP_S=30
# How many /24s from the one asked for docker_private tries before it gives up.
DOCKER_SUBNET_TRIES=32

docker_private() {
	_dk=$1 _dk_br=$2 _dk_net=$3
	DOCKER_PID='' DOCKER_EXEC_ROOT=''
	# The first /24 from SUBNET on that no route of this machine uses.
	_n=0
	while ip route | grep -q "^$_dk_net\.0/24 "; do
		_n=$((_n + 1))
		[ "$_n" -lt "$DOCKER_SUBNET_TRIES" ] ||
			{ echo "docker: no free /24 from $3.0 on" >&2; return 1; }
		_dk_net=${_dk_net%.*}.$((${_dk_net##*.} + 1))
	done
	# shellcheck disable=SC2034 # for the caller
	DOCKER_NET=$_dk_net
	DOCKER_EXEC_ROOT=/run/skiff-test-docker/$_dk_br
	DOCKER_SOCK=$DOCKER_EXEC_ROOT/docker.sock
	DOCKER_BRIDGE=$_dk_br
	DOCKER_CGROUP=skiff-test-docker-$_dk_br
	# dockerd makes these even with private roots: removed after, unless already there.
	DOCKER_LEFT=
	for _f in /etc/docker/key.json /run/docker/plugins /run/docker /run/containerd/s \
		/run/containerd; do
		[ -e "$_f" ] || DOCKER_LEFT="$DOCKER_LEFT $_f"
	done
	mkdir -p "$_dk/data" "$_dk/cli" "$DOCKER_EXEC_ROOT" || return 1
	ip link add "$_dk_br" type bridge && ip addr add "$_dk_net.1/24" dev "$_dk_br" &&
		ip link set "$_dk_br" up || return 1
	cat >"$_dk/daemon.json" <<-EOF || return 1
	{
		"data-root": "$_dk/data",
		"exec-root": "$DOCKER_EXEC_ROOT/exec",
		"pidfile": "$DOCKER_EXEC_ROOT/dockerd.pid",
		"hosts": ["unix://$DOCKER_SOCK"],
		"bridge": "$_dk_br",
		"iptables": false,
		"ip-forward": false,
		"ip-masq": false,
		"storage-driver": "overlay2",
		"cgroup-parent": "/$DOCKER_CGROUP",
		"containerd-namespace": "$DOCKER_CGROUP",
		"containerd-plugins-namespace": "$DOCKER_CGROUP-plugins",
		"log-driver": "json-file"
	}
	EOF
	export DOCKER_HOST="unix://$DOCKER_SOCK" DOCKER_CONFIG="$_dk/cli"
	dockerd --config-file "$_dk/daemon.json" >"$_dk/dockerd.log" 2>&1 &
	DOCKER_PID=$!
	_end=$(($(date +%s) + DOCKER_START_S))
	until docker version >/dev/null 2>&1; do
		if ! kill -0 "$DOCKER_PID" 2>/dev/null || [ "$(date +%s)" -ge "$_end" ]; then
			echo "docker: dockerd did not answer on $DOCKER_SOCK; its log ends:" >&2
			tail -n 15 "$_dk/dockerd.log" >&2
			return 1
		fi
		sleep 0.1
	done
}

# The pids of the processes whose command line names PATH (containerd, its shims).
_docker_pids_naming() {
	procs -p cmd-has "$1"
}

docker_private_down() {
	_dk=$1
	[ -n "${DOCKER_EXEC_ROOT:-}" ] || return 0
	if [ -n "${DOCKER_PID:-}" ]; then
		# shellcheck disable=SC2046
		docker rm -f $(docker ps -aq 2>/dev/null) >/dev/null 2>&1
		kill -TERM "$DOCKER_PID" 2>/dev/null
		_end=$(($(date +%s) + DOCKER_STOP_S))
		while kill -0 "$DOCKER_PID" 2>/dev/null && [ "$(date +%s)" -lt "$_end" ]; do
			sleep 0.1
		done
		kill -KILL "$DOCKER_PID" 2>/dev/null
		wait "$DOCKER_PID" 2>/dev/null
	fi
	# dockerd stops the containerd it started; whatever of it is left goes now.
	for _p in $(_docker_pids_naming "$DOCKER_EXEC_ROOT/"); do kill -KILL "$_p" 2>/dev/null; done
	for _root in "$_dk/" "$DOCKER_EXEC_ROOT/"; do
		awk -v t="$_root" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r |
			while read -r _m; do umount -l "$_m"; done
	done
	rm -rf "$_dk/data" "$DOCKER_EXEC_ROOT"
	rmdir /run/skiff-test-docker 2>/dev/null
	ip link del "$DOCKER_BRIDGE" 2>/dev/null
	for _c in /sys/fs/cgroup/*/"$DOCKER_CGROUP"; do
		[ ! -d "$_c" ] || rmdir "$_c" 2>/dev/null
	done
	# Files go; directories only when empty (another test's daemon may be using them).
	for _f in ${DOCKER_LEFT:-}; do
		if [ -d "$_f" ]; then rmdir "$_f" 2>/dev/null; else rm -f "$_f"; fi
	done
	DOCKER_PID='' DOCKER_EXEC_ROOT=''
}
