# A real Kubernetes test cluster for skiff's k8s tests (issue 24; see tests/k8s/README.md).
#
# Sourced by a test script after lib.sh (it also works on its own, for manual use):
#
#   . "$(dirname "$0")/lib.sh"
#   . "$SRC_DIR/tests/lib/k8s.sh"
#   k8s_require_root
#   test_cleanup_hook() { k8s_down; }
#   test_expect_success 'cluster' 'k8s_up 2'
#   test_expect_success 'nodes' 'k8s_kubectl get nodes'
#
# The cluster: one etcd, kube-apiserver, kube-controller-manager and kube-scheduler, and N
# nodes (1 or 2), each a kubelet with its own containerd (own root, state dir, socket, runc
# root and cgroup root), built from the pinned release in tests/k8s/go.mod and cached by
# version under $K8S_CACHE. The pod network is the bridge skk8s0 (10.244.0.0/24, host side
# 10.244.0.1, where the API server listens; node I is 10.244.0.(1+I)); pods get addresses
# from one host-local range shared by the nodes, so pods of both nodes share one L2 segment
# and nothing is routed or masqueraded (no sysctl, no iptables rule is changed for it).
# There is no kube-proxy and no DNS: service IPs do not route.
#
# No registry can be reached: the pause image (tests/k8s/pause.c) and a busybox-only image
# are built here and imported into each node's containerd; pods use them with
# imagePullPolicy: IfNotPresent ($K8S_IMAGE_BUSYBOX, $K8S_IMAGE_PAUSE).
#
# Functions:
#   k8s_require_root            skip the script unless root (fail in CI)
#   k8s_install_deps            apt-get install what is missing (the k8s group and more)
#   k8s_build                   build the binaries into $K8S_BIN unless cached (minutes once)
#   k8s_images                  build the image tars into $K8S_CACHE/images unless cached
#   k8s_image_debian S P REF    a Debian SUITE image with PKGS (debootstrap, cached) as REF
#   k8s_image_import TAR        import an image tar into every node's containerd
#   k8s_apiserver_stop/start    take the API server away (killed) and bring it back
#   k8s_up [N]                  start the cluster with N nodes (default 2), wait until Ready
#   k8s_down                    stop and delete everything; safe to call again
#   k8s_kubectl ARGS...         kubectl against the cluster (context $K8S_CONTEXT)
#   k8s_ctr I ARGS...           ctr against node I's containerd, namespace k8s.io
#   k8s_node I                  print node I's name
#
# Variables (set and exported when sourced): K8S_VERSION, K8S_CACHE, K8S_BIN, K8S_ID,
# K8S_DIR, K8S_KUBECONFIG, K8S_CONTEXT, K8S_IMAGE_PAUSE, K8S_IMAGE_BUSYBOX, K8S_BRIDGE,
# K8S_NET, K8S_SUBNET, K8S_API_URL, K8S_LOCK; K8S_N after k8s_up (also in $K8S_DIR/n).
#
# Isolation: the subnet, the bridge and the ports (26379-26380, 26443, 26241-26252) are one
# per host, so a lock (flock on $K8S_LOCK, held by a watchdog process) gives them to one
# k8s_up..k8s_down at a time; the watchdog also tears everything down if the sourcing
# script dies. Every process of the cluster (containerd shims and containers included) is
# in the pids cgroup /$K8S_CGROUP, so teardown finds all of them; names carry the script's
# pid (dir /tmp/skk8s.PID, cgroups skk8s.PID), and what a dead holder left is reclaimed by
# the next k8s_up. Things outside $K8S_DIR that the cluster touches, and teardown undoes:
# the kubelet's kernel tunables (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops,
# restored from $K8S_DIR/sysctl.saved), the pod netns under /run/netns (containerd 1.6 has
# no setting for it), CNI result caches in /var/lib/cni/results (named by our sandboxes), and shim sockets in
# /run/containerd/s (containerd 1.6 puts them there whatever its state dir).

K8S_VERSION=v1.34.4
K8S_CACHE=${K8S_CACHE:-/var/cache/skiff-test/k8s-$K8S_VERSION}
K8S_BIN=$K8S_CACHE/bin
K8S_CONTEXT=skiff-test
K8S_IMAGE_PAUSE=skiff.test/pause:1
K8S_IMAGE_BUSYBOX=skiff.test/busybox:1
K8S_BRIDGE=skk8s0
K8S_NET=10.244.0
K8S_SUBNET=10.244.0.0/24
K8S_API_URL=https://$K8S_NET.1:26443
if [ -z "${K8S_LOCK:-}" ]; then
	K8S_LOCK=/tmp/skiff-k8s.lock
	[ ! -d /run/lock ] || K8S_LOCK=/run/lock/skiff-k8s.lock
fi
K8S_LOCK_TIMEOUT=${K8S_LOCK_TIMEOUT:-900}
K8S_READY_TIMEOUT=${K8S_READY_TIMEOUT:-120}
# Fixed in the kubelet (its pluginapi.KubeletSocket), not under --root-dir.
K8S_DEVICE_SOCK=/var/lib/kubelet/device-plugins/kubelet.sock
K8S_GO=${K8S_GO:-/usr/local/go/bin/go}
export K8S_VERSION K8S_CACHE K8S_BIN K8S_CONTEXT K8S_IMAGE_PAUSE K8S_IMAGE_BUSYBOX \
	K8S_BRIDGE K8S_NET K8S_SUBNET K8S_API_URL K8S_LOCK

# _k8s_set_id ID: the names of one cluster instance (ours, or a dead holder's to reclaim).
_k8s_set_id() {
	K8S_ID=$1
	K8S_DIR=/tmp/skk8s.$1
	K8S_CGROUP=skk8s.$1
	K8S_KUBECONFIG=$K8S_DIR/kubeconfig
	export K8S_ID K8S_DIR K8S_CGROUP K8S_KUBECONFIG
}
_k8s_set_id $$

_k8s_tunables="vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
kernel/keys/root_maxkeys kernel/keys/root_maxbytes"
_k8s_pkgs="etcd-server containernetworking-plugins containerd runc openssl busybox-static
musl-tools iproute2 util-linux procps"
. "${SRC_DIR:?tests/lib/k8s.sh: set SRC_DIR to the source tree first}/tests/lib/packages.sh"
# ctr_debian_tar, for the Debian image (k8s_image_debian).
. "$SRC_DIR/tests/lib/container.sh"

_k8s_say() { printf 'k8s: %s\n' "$*" >&2; }
_k8s_err() { printf 'k8s: error: %s\n' "$*" >&2; return 1; }

_k8s_run() {
	_kr_what=$1
	shift
	_kr_out=$("$@" 2>&1) && return 0
	_kr_rc=$?
	_k8s_err "$_kr_what: '$*' exited $_kr_rc${_kr_out:+: $(printf '%s' "$_kr_out" | tail -n 5 | tr '\n' ' ')}"
}

_k8s_now() { date +%s.%N; }
_k8s_since() { awk -v a="$1" -v b="$(_k8s_now)" 'BEGIN { printf "%.1f", b - a }'; }

_k8s_starttime() {
	{ read -r _ks_stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	_ks_stat=${_ks_stat##*) }
	# shellcheck disable=SC2086
	set -- $_ks_stat
	case $1 in Z | X | x) return 1 ;; esac
	shift 19
	printf '%s\n' "$1"
}

_k8s_alive() {
	_ka_st=$(_k8s_starttime "$1") || return 1
	[ -z "${2:-}" ] || [ "$_ka_st" = "$2" ]
}

_k8s_isnum() {
	case $1 in '' | 0* | *[!0-9]*) return 1 ;; esac
}

k8s_node() { printf 'skk8s-%s\n' "$1"; }
_k8s_node_ip() { printf '%s.%s\n' "$K8S_NET" $((1 + $1)); }

k8s_kubectl() {
	"$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG" --context "$K8S_CONTEXT" "$@"
}

k8s_ctr() {
	_kc_i=$1
	shift
	ctr -a "$K8S_DIR/n$_kc_i/containerd.sock" -n k8s.io "$@"
}

# ---------------------------------------------------------------------------------------
# Root, packages, binaries, images

k8s_require_root() {
	[ "$(id -u)" = 0 ] && return 0
	if command -v test_skip_all >/dev/null 2>&1; then
		test_skip_all "needs root (kubelet, containerd, cgroups, a bridge)"
	fi
	if [ "${CI:-}" = true ]; then
		echo "Bail out! the k8s test cluster needs root, and CI must not skip it"
		exit 1
	fi
	_k8s_err "the k8s test cluster needs root"
}

k8s_install_deps() {
	# shellcheck disable=SC2086 # a list of names
	pkg_install $_k8s_pkgs
}

_k8s_check_tools() {
	_kct_missing=
	for _kct_c in etcd containerd containerd-shim-runc-v2 ctr runc openssl ip flock mount \
		umount musl-gcc tar sha256sum awk; do
		command -v "$_kct_c" >/dev/null 2>&1 || _kct_missing="$_kct_missing $_kct_c"
	done
	for _kct_c in /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback /bin/busybox; do
		[ -x "$_kct_c" ] || _kct_missing="$_kct_missing $_kct_c"
	done
	[ -z "$_kct_missing" ] || { _k8s_err "missing tools:$_kct_missing"; return 1; }
}

_k8s_cmds="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"

_k8s_built() {
	for _kb_c in $_k8s_cmds; do
		[ -x "$K8S_BIN/$_kb_c" ] || return 1
	done
}

# Build the five commands from the module in tests/k8s (the module proxy fetches
# k8s.io/kubernetes and its staging modules), version-stamped as a release build is, into
# $K8S_BIN. Serialised by a lock beside the cache; a second call finds them and returns.
k8s_build() {
	_k8s_built && return 0
	mkdir -p "$K8S_CACHE" || { _k8s_err "cannot create $K8S_CACHE"; return 1; }
	(
		flock -w 3600 8 || { _k8s_err "timed out waiting for $K8S_CACHE/build.lock"; exit 1; }
		_k8s_built && exit 0
		[ -x "$K8S_GO" ] || { _k8s_err "no Go toolchain at $K8S_GO"; exit 1; }
		_kbd_ld="-s -w"
		for _kbd_p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			_kbd_ld="$_kbd_ld -X $_kbd_p.gitVersion=$K8S_VERSION -X $_kbd_p.gitMajor=1"
			_kbd_ld="$_kbd_ld -X $_kbd_p.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
			_kbd_ld="$_kbd_ld -X $_kbd_p.gitTreeState=clean"
			_kbd_ld="$_kbd_ld -X $_kbd_p.buildDate=1970-01-01T00:00:00Z"
		done
		_kbd_pkgs=
		for _kbd_c in $_k8s_cmds; do _kbd_pkgs="$_kbd_pkgs k8s.io/kubernetes/cmd/$_kbd_c"; done
		_kbd_t0=$(_k8s_now)
		_k8s_say "building Kubernetes $K8S_VERSION into $K8S_BIN (minutes, once per machine)"
		rm -rf "$K8S_BIN.tmp"
		# shellcheck disable=SC2086 # a list of packages
		if ! (cd "$SRC_DIR/tests/k8s" && CGO_ENABLED=0 GOFLAGS="-p=${K8S_BUILD_JOBS:-2}" \
			nice -n 19 "$K8S_GO" build -trimpath -ldflags "$_kbd_ld" -o "$K8S_BIN.tmp/" \
			$_kbd_pkgs) >"$K8S_CACHE/build.log" 2>&1; then
			_k8s_err "go build failed; last lines of $K8S_CACHE/build.log:"
			tail -n 15 "$K8S_CACHE/build.log" | sed 's/^/k8s:   /' >&2
			exit 1
		fi
		rm -rf "$K8S_BIN" && mv "$K8S_BIN.tmp" "$K8S_BIN" || exit 1
		_k8s_say "built Kubernetes $K8S_VERSION in $(_k8s_since "$_kbd_t0")s"
	) 8>>"$K8S_CACHE/build.lock"
}

# _k8s_docker_archive ROOTFS REF CONFIG_JSON_FRAGMENT OUT: a one-layer image in the
# docker-archive format that `ctr images import` reads.
_k8s_docker_archive() {
	_kda_w=$4.d
	rm -rf "$_kda_w" && mkdir -p "$_kda_w/layer" || return 1
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "$1" \
		-cf "$_kda_w/layer/layer.tar" . || return 1
	_k8s_docker_archive_dir "$_kda_w" "$2" "$3" "$4"
}

# _k8s_docker_archive_tar LAYER_TAR REF CONFIG_JSON_FRAGMENT OUT: the same from a rootfs tar.
_k8s_docker_archive_tar() {
	_kda_w=$4.d
	rm -rf "$_kda_w" && mkdir -p "$_kda_w/layer" || return 1
	cp "$1" "$_kda_w/layer/layer.tar" || return 1
	_k8s_docker_archive_dir "$_kda_w" "$2" "$3" "$4"
}

# _k8s_docker_archive_dir WORK REF CONFIG_JSON_FRAGMENT OUT: WORK/layer/layer.tar made.
_k8s_docker_archive_dir() {
	_kda_w=$1
	_kda_diff=$(sha256sum "$_kda_w/layer/layer.tar" | cut -d' ' -f1)
	printf '{"architecture":"amd64","os":"linux","config":{%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$3" "$_kda_diff" >"$_kda_w/config.json" || return 1
	_kda_cfg=$(sha256sum "$_kda_w/config.json" | cut -d' ' -f1)
	mv "$_kda_w/config.json" "$_kda_w/$_kda_cfg.json" && mv "$_kda_w/layer" "$_kda_w/$_kda_diff" ||
		return 1
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]\n' \
		"$_kda_cfg" "$2" "$_kda_diff" >"$_kda_w/manifest.json" || return 1
	tar --numeric-owner --owner=0 --group=0 -C "$_kda_w" -cf "$4.tmp" manifest.json \
		"$_kda_cfg.json" "$_kda_diff" && mv "$4.tmp" "$4" && rm -rf "$_kda_w"
}

_k8s_images_built() {
	[ -f "$K8S_CACHE/images/pause.tar" ] && [ -f "$K8S_CACHE/images/busybox.tar" ]
}

# The pause image (tests/k8s/pause.c, static musl) and the busybox image: /bin/busybox, a
# link per applet, /etc/passwd and group, /tmp 1777. No libc, no bash, no python.
k8s_images() {
	_k8s_images_built && return 0
	mkdir -p "$K8S_CACHE/images" || { _k8s_err "cannot create $K8S_CACHE/images"; return 1; }
	(
		flock -w 600 8 || { _k8s_err "timed out waiting for $K8S_CACHE/images.lock"; exit 1; }
		_k8s_images_built && exit 0
		_ki_w=$K8S_CACHE/images/work
		rm -rf "$_ki_w" && mkdir -p "$_ki_w/pause" "$_ki_w/bb" || exit 1
		_k8s_run "pause binary" musl-gcc -static -Os -s -o "$_ki_w/pause/pause" \
			"$SRC_DIR/tests/k8s/pause.c" || exit 1
		_k8s_docker_archive "$_ki_w/pause" "$K8S_IMAGE_PAUSE" '"Entrypoint":["/pause"]' \
			"$K8S_CACHE/images/pause.tar" || { _k8s_err "cannot write the pause image"; exit 1; }
		_ki_bb=$_ki_w/bb
		mkdir -p "$_ki_bb/bin" "$_ki_bb/sbin" "$_ki_bb/usr/bin" "$_ki_bb/usr/sbin" \
			"$_ki_bb/etc" "$_ki_bb/tmp" "$_ki_bb/root" "$_ki_bb/proc" "$_ki_bb/sys" \
			"$_ki_bb/dev" || exit 1
		cp /bin/busybox "$_ki_bb/bin/busybox" || exit 1
		for _ki_a in $(/bin/busybox --list-full); do
			[ -e "$_ki_bb/$_ki_a" ] || [ -L "$_ki_bb/$_ki_a" ] || ln -s /bin/busybox "$_ki_bb/$_ki_a" ||
				exit 1
		done
		[ -L "$_ki_bb/bin/sh" ] || { _k8s_err "no sh applet in /bin/busybox"; exit 1; }
		printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' \
			>"$_ki_bb/etc/passwd" || exit 1
		printf 'root:x:0:\nnogroup:x:65534:\n' >"$_ki_bb/etc/group" || exit 1
		chmod 1777 "$_ki_bb/tmp" && chmod 700 "$_ki_bb/root" || exit 1
		_k8s_docker_archive "$_ki_bb" "$K8S_IMAGE_BUSYBOX" \
			'"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["sh"]' \
			"$K8S_CACHE/images/busybox.tar" || { _k8s_err "cannot write the busybox image"; exit 1; }
		rm -rf "$_ki_w"
	) 8>>"$K8S_CACHE/images.lock"
}

# k8s_image_debian SUITE PKGS REF: an image REF of `debootstrap --variant=minbase
# --include=PKGS SUITE` (ctr_debian_tar, tests/lib/container.sh: made once, cached in
# /var/cache/skiff-test), as a docker-archive tar in $K8S_CACHE/images; prints its path.
k8s_image_debian() {
	_kid_tar=$(ctr_debian_tar "$1" "$2") || return 1
	_kid_out=$K8S_CACHE/images/$(printf '%s' "$3" | tr -c 'a-zA-Z0-9.\n' _).tar
	if [ ! -s "$_kid_out" ] || [ "$_kid_out" -ot "$_kid_tar" ]; then
		mkdir -p "$K8S_CACHE/images" &&
			_k8s_docker_archive_tar "$_kid_tar" "$3" \
				'"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["bash"]' \
				"$_kid_out" || { _k8s_err "cannot write the image $3"; return 1; }
	fi
	printf '%s\n' "$_kid_out"
}

# k8s_image_import TAR: import a docker-archive image into every node's containerd.
k8s_image_import() {
	_kii=1
	while [ "$_kii" -le "${K8S_N:-0}" ]; do
		_k8s_run "import $1 on node $_kii" k8s_ctr "$_kii" images import "$1" || return 1
		_kii=$((_kii + 1))
	done
}

# ---------------------------------------------------------------------------------------
# The lock and the watchdog (as in nodes.sh)

_k8s_watchdog() {
	trap '' HUP INT TERM QUIT PIPE
	exec 9>>"$K8S_LOCK" || { echo failed >"$K8S_DIR/lock.state"; exit 1; }
	if ! flock -n 9; then
		echo waiting >"$K8S_DIR/lock.state"
		if ! flock -w "$K8S_LOCK_TIMEOUT" 9; then
			echo timeout >"$K8S_DIR/lock.state"
			exit 1
		fi
	fi
	printf 'pid %s (%s), dir %s, since %s\n' "$K8S_ID" "${test_name:-$0}" "$K8S_DIR" \
		"$(date '+%F %T')" >"$K8S_LOCK"
	echo held >"$K8S_DIR/lock.state"
	while _k8s_alive "$K8S_ID" "$_k8s_owner_start"; do
		sleep 0.5 9>&-
	done
	echo "$(date '+%F %T') pid $K8S_ID exited without k8s_down; tearing down"
	_k8s_teardown watchdog
	exit 0
}

_k8s_lock_acquire() {
	_k8s_owner_start=$(_k8s_starttime "$K8S_ID") ||
		{ _k8s_err "cannot read /proc/$K8S_ID/stat"; return 1; }
	: >>"$K8S_LOCK" 2>/dev/null || { _k8s_err "cannot open the lock file $K8S_LOCK"; return 1; }
	_k8s_watchdog </dev/null >>"$K8S_DIR/watchdog.log" 2>&1 &
	_kla_pid=$!
	printf '%s %s\n' "$_kla_pid" "$(_k8s_starttime "$_kla_pid" || echo 0)" >"$K8S_DIR/watchdog.pid"
	_kla_said=
	while :; do
		_kla_state=$(cat "$K8S_DIR/lock.state" 2>/dev/null)
		case $_kla_state in
		held) return 0 ;;
		waiting)
			[ -n "$_kla_said" ] || _k8s_say "waiting up to ${K8S_LOCK_TIMEOUT}s for the k8s" \
				"test cluster, held by $(cat "$K8S_LOCK" 2>/dev/null)"
			_kla_said=1
			;;
		esac
		if ! _k8s_alive "$_kla_pid"; then
			_k8s_err "the lock watchdog exited ($_kla_state; $(cat "$K8S_DIR/watchdog.log" 2>/dev/null))"
			return 1
		fi
		sleep 0.1
	done
}

# With the lock held, whatever another instance left is stale: tear it down by its names.
_k8s_reclaim_stale() {
	for _krs_d in /sys/fs/cgroup/pids/skk8s.* /tmp/skk8s.*; do
		[ -e "$_krs_d" ] || continue
		_krs_id=${_krs_d##*/skk8s.}
		_k8s_isnum "$_krs_id" && [ "$_krs_id" != "$K8S_ID" ] || continue
		# A live watchdog there is a script waiting for the lock: not stale.
		_krs_w=
		_krs_ws=
		[ ! -f "/tmp/skk8s.$_krs_id/watchdog.pid" ] ||
			read -r _krs_w _krs_ws <"/tmp/skk8s.$_krs_id/watchdog.pid"
		[ -z "$_krs_w" ] || ! _k8s_alive "$_krs_w" "$_krs_ws" || continue
		# A dir kept for its logs, with nothing running or mounted, is left alone.
		[ -d "/sys/fs/cgroup/pids/skk8s.$_krs_id" ] ||
			grep -qF " /tmp/skk8s.$_krs_id/" /proc/self/mountinfo || continue
		_k8s_say "reclaiming the stale cluster of pid $_krs_id"
		(_k8s_set_id "$_krs_id" && _k8s_teardown reclaim) || true
	done
	# The bridge is one per host, so only a stale holder can have left it.
	if ip link show "$K8S_BRIDGE" >/dev/null 2>&1; then
		_k8s_say "reclaiming stale bridge $K8S_BRIDGE"
		ip link del "$K8S_BRIDGE" 2>/dev/null
	fi
	return 0
}

_k8s_check_net_free() {
	_kcn=$(ip -o -4 addr show to "$K8S_SUBNET" 2>&1) ||
		{ _k8s_err "ip addr show failed: $_kcn"; return 1; }
	[ -z "$_kcn" ] || { _k8s_err "$K8S_SUBNET is in use on this host: $_kcn"; return 1; }
	_kcn=$(ip -4 route show root "$K8S_SUBNET" 2>&1
		ip -4 route show match "$K8S_SUBNET" 2>&1 | grep -v '^default')
	[ -z "$_kcn" ] || { _k8s_err "$K8S_SUBNET is routed on this host: $_kcn"; return 1; }
	for _kcn_p in 26379 26380 26443 26241 26242 26251 26252; do
		if ss -Htln "sport = :$_kcn_p" 2>/dev/null | grep -q .; then
			_k8s_err "port $_kcn_p is in use on this host: $(ss -Htlnp "sport = :$_kcn_p" 2>&1)"
			return 1
		fi
	done
}

# ---------------------------------------------------------------------------------------
# Certificates and config files

_k8s_ca() {
	_kp=$K8S_DIR/pki
	mkdir -p "$_kp" && chmod 700 "$_kp" || return 1
	_k8s_run "CA key" openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out "$_kp/ca.key" || return 1
	_k8s_run "CA cert" openssl req -x509 -new -key "$_kp/ca.key" -days 30 -sha256 \
		-subj "/CN=skiff-test-ca" -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out "$_kp/ca.crt" ||
		return 1
	_k8s_run "service account key" openssl genpkey -algorithm EC \
		-pkeyopt ec_paramgen_curve:P-256 -out "$_kp/sa.key" || return 1
	_k8s_run "service account public key" openssl pkey -in "$_kp/sa.key" -pubout \
		-out "$_kp/sa.pub"
}

# _k8s_cert NAME SUBJECT USAGE [SANS]: a key and a CA-signed cert in $K8S_DIR/pki.
_k8s_cert() {
	_kp=$K8S_DIR/pki
	printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s\n' \
		"$3" "${4:+subjectAltName=$4}" >"$_kp/$1.ext" || return 1
	_k8s_run "$1 key" openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$_kp/$1.key" -subj "$2" -out "$_kp/$1.csr" || return 1
	_k8s_run "$1 cert" openssl x509 -req -in "$_kp/$1.csr" -CA "$_kp/ca.crt" \
		-CAkey "$_kp/ca.key" -set_serial "0x$(openssl rand -hex 16)" -days 30 -sha256 \
		-extfile "$_kp/$1.ext" -out "$_kp/$1.crt" || return 1
	rm -f "$_kp/$1.csr" "$_kp/$1.ext"
}

# _k8s_kubeconfig FILE CERTNAME: a kubeconfig for the cert's user, context $K8S_CONTEXT.
_k8s_kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $K8S_CONTEXT
  cluster:
    server: $K8S_API_URL
    certificate-authority: $K8S_DIR/pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $K8S_DIR/pki/$2.crt
    client-key: $K8S_DIR/pki/$2.key
contexts:
- name: $K8S_CONTEXT
  context:
    cluster: $K8S_CONTEXT
    user: $2
    namespace: default
current-context: $K8S_CONTEXT
EOF
}

_k8s_write_pki() {
	_k8s_ca || return 1
	_k8s_cert apiserver "/CN=kube-apiserver" serverAuth \
		"IP:$K8S_NET.1,IP:127.0.0.1,IP:10.245.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" ||
		return 1
	_k8s_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" \
		clientAuth || return 1
	_k8s_cert admin "/O=system:masters/CN=skiff-test-admin" clientAuth || return 1
	_k8s_cert controller-manager "/CN=system:kube-controller-manager" clientAuth || return 1
	_k8s_cert scheduler "/CN=system:kube-scheduler" clientAuth || return 1
	_k8s_kubeconfig "$K8S_KUBECONFIG" admin || return 1
	_k8s_kubeconfig "$K8S_DIR/controller-manager.kubeconfig" controller-manager || return 1
	_k8s_kubeconfig "$K8S_DIR/scheduler.kubeconfig" scheduler
}

# One shared CNI network for all nodes: a bridge (made by k8s_up, with the host addresses)
# and one host-local range, whose allocations both containerds see through one dataDir.
_k8s_write_cni() {
	mkdir -p "$K8S_DIR/cni/net.d" "$K8S_DIR/cni/ipam" || return 1
	cat >"$K8S_DIR/cni/net.d/10-skk8s.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "skk8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$K8S_BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$K8S_DIR/cni/ipam",
        "ranges": [[{ "subnet": "$K8S_SUBNET", "rangeStart": "$K8S_NET.16", "rangeEnd": "$K8S_NET.254" }]]
      }
    }
  ]
}
EOF
}

_k8s_write_node() {
	_kwn_d=$K8S_DIR/n$1
	_kwn_n=$(k8s_node "$1")
	_kwn_ip=$(_k8s_node_ip "$1")
	mkdir -p "$_kwn_d/kubelet" "$_kwn_d/pod-logs" "$_kwn_d/containerd" || return 1
	_k8s_cert "node$1" "/O=system:nodes/CN=system:node:$_kwn_n" clientAuth || return 1
	_k8s_cert "node$1-serving" "/O=system:nodes/CN=system:node:$_kwn_n" serverAuth \
		"IP:$_kwn_ip,DNS:$_kwn_n" || return 1
	_k8s_kubeconfig "$_kwn_d/kubelet.kubeconfig" "node$1" || return 1
	cat >"$_kwn_d/containerd.toml" <<EOF
version = 2
root = "$_kwn_d/containerd/root"
state = "$_kwn_d/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$_kwn_d/containerd.sock"
[ttrpc]
  address = "$_kwn_d/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$_kwn_d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$K8S_IMAGE_PAUSE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  # No CAP_SYS_RESOURCE here: runc cannot lower the pause container's oom_score_adj to
  # -998 ("can't get final child's PID from pipe: EOF"); clamp to containerd's own value.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$_kwn_d/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$K8S_DIR/cni/net.d"
    max_conf_num = 1
EOF
	cat >"$_kwn_d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $_kwn_ip
port: $((26250 + $1))
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((26240 + $1))
tlsCertFile: $K8S_DIR/pki/node$1-serving.crt
tlsPrivateKeyFile: $K8S_DIR/pki/node$1-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $K8S_DIR/pki/ca.crt}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$_kwn_d/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /$K8S_CGROUP/n$1
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
failSwapOn: false
failCgroupV1: false
makeIPTablesUtilChains: false
podLogsDir: $_kwn_d/pod-logs
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 1Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
evictionPressureTransitionPeriod: 5s
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
fileCheckFrequency: 10s
serializeImagePulls: false
maxPods: 50
EOF
}

# ---------------------------------------------------------------------------------------
# Processes

_k8s_hierarchies() {
	for _kh in /sys/fs/cgroup/*; do
		[ -f "$_kh/cgroup.procs" ] && printf '%s\n' "$_kh"
	done
}

# Make /$K8S_CGROUP/{daemons,nI} in every cgroup hierarchy (the kubelet checks its root
# exists in each); a v1 cpuset needs cpus and mems before a task may join.
_k8s_cgroups() {
	for _kcg_h in $(_k8s_hierarchies); do
		for _kcg_s in "" /daemons $(seq -f /n%g "$1"); do
			_kcg_d=$_kcg_h/$K8S_CGROUP$_kcg_s
			[ -d "$_kcg_d" ] || mkdir "$_kcg_d" || { _k8s_err "cannot create $_kcg_d"; return 1; }
			if [ -f "$_kcg_d/cpuset.cpus" ]; then
				cat "${_kcg_d%/*}/cpuset.cpus" >"$_kcg_d/cpuset.cpus" &&
					cat "${_kcg_d%/*}/cpuset.mems" >"$_kcg_d/cpuset.mems" ||
					{ _k8s_err "cannot set up cpuset $_kcg_d"; return 1; }
			fi
		done
	done
}

# _k8s_spawn NAME CMD...: start a daemon in the cluster's pids cgroup, log in log/NAME.
_k8s_spawn() {
	_ksp_n=$1
	shift
	# shellcheck disable=SC2016 # expanded by the child shell
	setsid sh -c 'echo $$ >"$0" && exec "$@"' \
		"/sys/fs/cgroup/pids/$K8S_CGROUP/daemons/cgroup.procs" "$@" \
		</dev/null >"$K8S_DIR/log/$_ksp_n.log" 2>&1 &
	echo "$!" >"$K8S_DIR/$_ksp_n.pid"
}

# _k8s_wait WHAT SECONDS LOGNAME CMD...: poll CMD every 0.2 s until it succeeds.
_k8s_wait() {
	_kw_what=$1
	_kw_n=$(($2 * 5))
	_kw_log=$3
	shift 3
	while ! "$@" >/dev/null 2>&1; do
		if [ -n "$_kw_log" ] && [ -f "$K8S_DIR/$_kw_log.pid" ] &&
			! _k8s_alive "$(cat "$K8S_DIR/$_kw_log.pid")"; then
			_k8s_err "$_kw_what: $_kw_log exited; last lines of $K8S_DIR/log/$_kw_log.log:"
			tail -n 15 "$K8S_DIR/log/$_kw_log.log" | sed 's/^/k8s:   /' >&2
			return 1
		fi
		if [ "$_kw_n" -le 0 ]; then
			_k8s_err "$_kw_what: not after ${2}s (log $K8S_DIR/log/$_kw_log.log):"
			[ -z "$_kw_log" ] || tail -n 15 "$K8S_DIR/log/$_kw_log.log" | sed 's/^/k8s:   /' >&2
			return 1
		fi
		_kw_n=$((_kw_n - 1))
		sleep 0.2
	done
}

# _k8s_bound_since MARK: the device-plugin socket was made after the file MARK.
_k8s_bound_since() {
	[ -S "$K8S_DEVICE_SOCK" ] && [ -n "$(find "$K8S_DEVICE_SOCK" -newer "$1" 2>/dev/null)" ]
}

# The API server, in the cluster's cgroup; k8s_apiserver_stop/start take it away and back.
_k8s_start_apiserver() {
	_kp=$K8S_DIR/pki
	_k8s_spawn apiserver "$K8S_BIN/kube-apiserver" \
		--etcd-servers=http://127.0.0.1:26379 \
		--bind-address="$K8S_NET.1" --advertise-address="$K8S_NET.1" --secure-port=26443 \
		--cert-dir="$K8S_DIR/apiserver" \
		--tls-cert-file="$_kp/apiserver.crt" --tls-private-key-file="$_kp/apiserver.key" \
		--client-ca-file="$_kp/ca.crt" \
		--kubelet-client-certificate="$_kp/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$_kp/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$_kp/ca.crt" \
		--kubelet-preferred-address-types=InternalIP \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$_kp/sa.pub" \
		--service-account-signing-key-file="$_kp/sa.key" \
		--service-cluster-ip-range=10.245.0.0/24 \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--allow-privileged=true --profiling=false
}

# k8s_apiserver_stop: kill the API server (its clients' connections are refused); the
# cluster's other parts keep running.
k8s_apiserver_stop() {
	[ -f "$K8S_DIR/apiserver.pid" ] || { _k8s_err "no API server pid"; return 1; }
	kill -KILL "$(cat "$K8S_DIR/apiserver.pid")" 2>/dev/null
	_k8s_wait "the API server gone" 10 "" sh -c '! ss -Htln "sport = :26443" | grep -q .'
}

# k8s_apiserver_start: start it again and wait until it is ready.
k8s_apiserver_start() {
	mv -f "$K8S_DIR/log/apiserver.log" "$K8S_DIR/log/apiserver.log.$(date +%s)" 2>/dev/null
	_k8s_start_apiserver
	_k8s_wait "kube-apiserver ready" 60 apiserver k8s_kubectl get --raw /readyz
}

_k8s_nodes_ready() {
	_knr=$(k8s_kubectl get nodes -o \
		'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' \
		2>/dev/null) || return 1
	[ "$(printf '%s\n' "$_knr" | grep -c '^True$')" = "$1" ]
}

_k8s_up() {
	_ku_n=${1:-2}
	case $_ku_n in 1 | 2) ;; *) _k8s_err "usage: k8s_up [N] (N is 1 or 2)"; return 2 ;; esac
	[ "$(id -u)" = 0 ] || { _k8s_err "k8s_up needs root"; return 2; }
	_ku_w=
	_ku_ws=
	[ ! -f "$K8S_DIR/watchdog.pid" ] || read -r _ku_w _ku_ws <"$K8S_DIR/watchdog.pid"
	if [ -e "$K8S_DIR/up" ] || { [ -n "$_ku_w" ] && _k8s_alive "$_ku_w" "$_ku_ws"; }; then
		_k8s_err "the cluster is already up in $K8S_DIR (call k8s_down first)"
		return 2
	fi
	_k8s_check_tools 2>/dev/null || k8s_install_deps || return 2
	_k8s_check_tools || return 2
	k8s_build || return 2
	k8s_images || return 2

	_ku_t0=$(_k8s_now)
	rm -rf "$K8S_DIR"
	mkdir -m 755 "$K8S_DIR" "$K8S_DIR/log" || { _k8s_err "cannot create $K8S_DIR"; return 2; }
	_k8s_lock_acquire || return 1
	_ku_tl=$(_k8s_now)
	_k8s_reclaim_stale
	_k8s_check_net_free || return 1
	echo "$_ku_n" >"$K8S_DIR/n"

	# The kubelet sets these kernel tunables (it cannot be told not to); put them back after.
	for _ku_t in $_k8s_tunables; do
		printf '%s %s\n' "$_ku_t" "$(cat "/proc/sys/$_ku_t")"
	done >"$K8S_DIR/sysctl.saved" || { _k8s_err "cannot save the kernel tunables"; return 1; }
	[ -d /run/containerd ] || : >"$K8S_DIR/made-run-containerd"
	[ -d /var/lib/cni ] || : >"$K8S_DIR/made-var-lib-cni"

	_k8s_write_pki || return 1
	_k8s_write_cni || return 1
	_ku_i=1
	while [ "$_ku_i" -le "$_ku_n" ]; do
		_k8s_write_node "$_ku_i" || return 1
		_ku_i=$((_ku_i + 1))
	done
	_k8s_cgroups "$_ku_n" || return 1
	_k8s_run "bridge" ip link add "$K8S_BRIDGE" type bridge || return 1
	_k8s_run "bridge address" ip addr add "$K8S_NET.1/24" dev "$K8S_BRIDGE" || return 1
	_ku_i=1
	while [ "$_ku_i" -le "$_ku_n" ]; do
		_k8s_run "node address" ip addr add "$(_k8s_node_ip "$_ku_i")/32" dev "$K8S_BRIDGE" ||
			return 1
		_ku_i=$((_ku_i + 1))
	done
	_k8s_run "bridge up" ip link set "$K8S_BRIDGE" up || return 1

	_k8s_spawn etcd etcd --name skk8s --data-dir "$K8S_DIR/etcd" \
		--listen-client-urls http://127.0.0.1:26379 \
		--advertise-client-urls http://127.0.0.1:26379 \
		--listen-peer-urls http://127.0.0.1:26380 \
		--initial-advertise-peer-urls http://127.0.0.1:26380 \
		--initial-cluster skk8s=http://127.0.0.1:26380 --log-level warn
	_ku_i=1
	while [ "$_ku_i" -le "$_ku_n" ]; do
		_k8s_spawn "containerd$_ku_i" containerd --config "$K8S_DIR/n$_ku_i/containerd.toml"
		_ku_i=$((_ku_i + 1))
	done
	_k8s_start_apiserver
	_ku_i=1
	while [ "$_ku_i" -le "$_ku_n" ]; do
		_k8s_wait "containerd of node $_ku_i" 30 "containerd$_ku_i" \
			ctr -a "$K8S_DIR/n$_ku_i/containerd.sock" version || return 1
		_k8s_run "import the pause image" k8s_ctr "$_ku_i" images import \
			"$K8S_CACHE/images/pause.tar" || return 1
		_k8s_run "import the busybox image" k8s_ctr "$_ku_i" images import \
			"$K8S_CACHE/images/busybox.tar" || return 1
		_ku_i=$((_ku_i + 1))
	done
	_k8s_wait "kube-apiserver ready" 60 apiserver k8s_kubectl get --raw /readyz || return 1
	_ku_ta=$(_k8s_now)
	_k8s_spawn controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig="$K8S_DIR/controller-manager.kubeconfig" \
		--secure-port=0 --leader-elect=false \
		--service-account-private-key-file="$_kp/sa.key" --root-ca-file="$_kp/ca.crt" \
		--use-service-account-credentials=true \
		--cluster-signing-cert-file="$_kp/ca.crt" --cluster-signing-key-file="$_kp/ca.key"
	_k8s_spawn scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig="$K8S_DIR/scheduler.kubeconfig" --secure-port=0 --leader-elect=false
	# A kubelet's device-plugin registry is one fixed socket whatever its --root-dir
	# ($K8S_DEVICE_SOCK): each kubelet removes what is there, then binds. Two started
	# together can both remove and then race to bind, and the loser exits ("address
	# already in use"). So each kubelet starts once the one before has bound it; the
	# next one's removal leaves the earlier kubelet running (no device plugins here).
	_ku_i=1
	while [ "$_ku_i" -le "$_ku_n" ]; do
		: >"$K8S_DIR/n$_ku_i/kubelet.spawned"
		_k8s_spawn "kubelet$_ku_i" "$K8S_BIN/kubelet" \
			--config="$K8S_DIR/n$_ku_i/kubelet.yaml" \
			--kubeconfig="$K8S_DIR/n$_ku_i/kubelet.kubeconfig" \
			--hostname-override="$(k8s_node "$_ku_i")" --node-ip="$(_k8s_node_ip "$_ku_i")" \
			--root-dir="$K8S_DIR/n$_ku_i/kubelet" --cert-dir="$K8S_DIR/n$_ku_i/kubelet/pki"
		if [ "$_ku_i" -lt "$_ku_n" ]; then
			_k8s_wait "kubelet $_ku_i's device-plugin socket" "$K8S_READY_TIMEOUT" \
				"kubelet$_ku_i" _k8s_bound_since "$K8S_DIR/n$_ku_i/kubelet.spawned" ||
				return 1
		fi
		_ku_i=$((_ku_i + 1))
	done
	_k8s_wait "$_ku_n node(s) Ready" "$K8S_READY_TIMEOUT" kubelet1 _k8s_nodes_ready "$_ku_n" ||
		return 1
	# The pods of a namespace need its service account, which the controller manager makes.
	_k8s_wait "the default service account" 60 controller-manager \
		k8s_kubectl get serviceaccount default || return 1
	: >"$K8S_DIR/up"
	K8S_N=$_ku_n
	export K8S_N
	_k8s_say "$_ku_n node(s) Ready in $(_k8s_since "$_ku_t0")s ($(_k8s_since "$_ku_tl")s" \
		"after the lock, $(_k8s_since "$_ku_ta")s after the API server)"
}

# k8s_up [N]: start the cluster; on failure, tear down what was started.
k8s_up() {
	_k8s_up "$@"
	case $? in
	0) return 0 ;;
	2) return 1 ;;
	esac
	_k8s_err "k8s_up failed; tearing down what it started (logs kept in $K8S_DIR/log)"
	test_failed=1 _k8s_teardown down || true
	return 1
}

# ---------------------------------------------------------------------------------------
# Teardown

_k8s_procs() {
	[ -d "/sys/fs/cgroup/pids/$K8S_CGROUP" ] || return 0
	find "/sys/fs/cgroup/pids/$K8S_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null
}

_k8s_our_mounts() {
	awk -v d="$K8S_DIR/" 'index($5, d) == 1 || $5 == substr(d, 1, length(d) - 1) { print $5 }' \
		/proc/self/mountinfo | sort -r
}

# _k8s_teardown down|watchdog|reclaim: stop and delete everything; safe to repeat, and
# after a partial k8s_up. Returns 1 if something could not be removed.
_k8s_teardown() {
	_ktd_mode=$1
	_ktd_fail=0
	_ktd_w=
	_ktd_ws=
	if [ "$_ktd_mode" = down ] && [ -f "$K8S_DIR/watchdog.pid" ]; then
		read -r _ktd_w _ktd_ws <"$K8S_DIR/watchdog.pid" || _ktd_w=
	fi
	# 1. Before anything dies: the pods' network namespaces and the shims' sockets.
	_ktd_hostns=$(readlink /proc/self/ns/net)
	_ktd_ns=
	_ktd_socks=
	_ktd_sandboxes=
	for _ktd_p in $(_k8s_procs); do
		_ktd_x=$(readlink "/proc/$_ktd_p/ns/net" 2>/dev/null) || continue
		[ "$_ktd_x" = "$_ktd_hostns" ] || _ktd_ns="$_ktd_ns $_ktd_x"
		_ktd_c=$(tr '\0' ' ' <"/proc/$_ktd_p/cmdline" 2>/dev/null)
		case $_ktd_c in
		*containerd-shim*)
			# shellcheck disable=SC2086
			set -- $_ktd_c
			_ktd_id=
			_ktd_a=
			_ktd_nsn=
			while [ $# -gt 1 ]; do
				case $1 in -id) _ktd_id=$2 ;; -address) _ktd_a=$2 ;; -namespace) _ktd_nsn=$2 ;; esac
				shift
			done
			[ -n "$_ktd_id" ] || continue
			_ktd_socks="$_ktd_socks $(printf '%s/%s/%s' "$_ktd_a" "$_ktd_nsn" "$_ktd_id" |
				sha256sum | cut -d' ' -f1)"
			# A shim per pod, named by its sandbox: the CNI result caches are named by it.
			_ktd_sandboxes="$_ktd_sandboxes $_ktd_id"
			;;
		esac
	done
	# 2. Kubelets first (they would restart what dies), then containerds, then the rest,
	# until the cgroup is empty: shims, containers, the control plane, etcd.
	for _ktd_n in kubelet1 kubelet2 containerd1 containerd2; do
		[ -f "$K8S_DIR/$_ktd_n.pid" ] || continue
		kill -KILL "$(cat "$K8S_DIR/$_ktd_n.pid")" 2>/dev/null
	done
	_ktd_i=100
	while _ktd_p=$(_k8s_procs) && [ -n "$_ktd_p" ]; do
		# shellcheck disable=SC2086
		kill -KILL $_ktd_p 2>/dev/null
		[ "$_ktd_i" -gt 0 ] || { _k8s_err "processes do not die: $_ktd_p"; _ktd_fail=1; break; }
		_ktd_i=$((_ktd_i - 1))
		sleep 0.1
	done
	# 3. The pod netns files (/run/netns/cni-*) whose namespace was one of ours.
	for _ktd_f in /run/netns/cni-*; do
		[ -e "$_ktd_f" ] || continue
		_ktd_ino=$(stat -L -c %i "$_ktd_f" 2>/dev/null) || continue
		case " $_ktd_ns " in
		*" net:[$_ktd_ino] "*)
			umount "$_ktd_f" 2>/dev/null || umount -l "$_ktd_f" 2>/dev/null
			rm -f "$_ktd_f" || { _k8s_err "cannot remove $_ktd_f"; _ktd_fail=1; }
			;;
		esac
	done
	# 4. Mounts under the dir (overlays, shm, the kubelet's tmpfs volumes), deepest first.
	for _ktd_m in $(_k8s_our_mounts); do
		umount "$_ktd_m" 2>/dev/null || umount -l "$_ktd_m" 2>/dev/null ||
			{ _k8s_err "cannot unmount $_ktd_m"; _ktd_fail=1; }
	done
	# 5. The bridge and any veth still on it (the lock holder owns the name).
	if [ "$_ktd_mode" != reclaim ] && ip link show "$K8S_BRIDGE" >/dev/null 2>&1; then
		for _ktd_l in $(ip -o link show master "$K8S_BRIDGE" 2>/dev/null |
			sed -n 's/^[0-9]*: \([^:@]*\)[:@].*/\1/p'); do
			ip link del "$_ktd_l" 2>/dev/null
		done
		ip link del "$K8S_BRIDGE" 2>/dev/null ||
			{ _k8s_err "cannot delete bridge $K8S_BRIDGE"; _ktd_fail=1; }
	fi
	# 6. Cgroups, deepest first, in every hierarchy.
	for _ktd_h in $(_k8s_hierarchies); do
		[ -d "$_ktd_h/$K8S_CGROUP" ] || continue
		find "$_ktd_h/$K8S_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null
		[ ! -d "$_ktd_h/$K8S_CGROUP" ] ||
			{ _k8s_err "cannot remove cgroup $_ktd_h/$K8S_CGROUP"; _ktd_fail=1; }
	done
	# 7. What lives outside the dir: kernel tunables, CNI result caches, shim sockets.
	if [ -f "$K8S_DIR/sysctl.saved" ]; then
		while read -r _ktd_t _ktd_v; do
			[ "$(cat "/proc/sys/$_ktd_t")" = "$_ktd_v" ] ||
				printf '%s\n' "$_ktd_v" >"/proc/sys/$_ktd_t" ||
				{ _k8s_err "cannot restore /proc/sys/$_ktd_t to $_ktd_v"; _ktd_fail=1; }
		done <"$K8S_DIR/sysctl.saved"
	fi
	for _ktd_s in $_ktd_sandboxes; do
		rm -f "/var/lib/cni/results/skk8s-$_ktd_s-eth0" \
			"/var/lib/cni/results/cni-loopback-$_ktd_s-lo"
	done
	[ ! -f "$K8S_DIR/made-var-lib-cni" ] ||
		rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null
	for _ktd_s in $_ktd_socks; do rm -f "/run/containerd/s/$_ktd_s"; done
	# containerd makes /run/containerd/s (and ctr fifo, runc): remove it if it is ours, empty.
	[ ! -f "$K8S_DIR/made-run-containerd" ] ||
		rmdir /run/containerd/s /run/containerd/fifo /run/containerd/runc/k8s.io \
			/run/containerd/runc /run/containerd 2>/dev/null
	# 8. Check.
	_ktd_left="$(_k8s_procs) $(_k8s_our_mounts)"
	# shellcheck disable=SC2086,SC2116 # squeeze the blanks
	_ktd_left=$(echo $_ktd_left)
	if [ -n "$_ktd_left" ]; then
		_k8s_err "teardown left behind: $_ktd_left"
		_ktd_fail=1
	fi
	rm -f "$K8S_DIR/up"
	# 9. The dir: kept with SKIFF_TEST_KEEP, after a failed test, or after a script died.
	if [ -d "$K8S_DIR" ]; then
		if [ -n "${SKIFF_TEST_KEEP:-}" ] || [ "${test_failed:-0}" != 0 ] ||
			[ "$_ktd_mode" != down ] || [ "$_ktd_fail" != 0 ]; then
			_k8s_say "kept $K8S_DIR"
		else
			rm -rf "$K8S_DIR"
		fi
	fi
	# 10. The lock, last.
	if [ -n "$_ktd_w" ] && _k8s_alive "$_ktd_w" "$_ktd_ws"; then
		kill -KILL "$_ktd_w" 2>/dev/null
	fi
	rm -f "$K8S_DIR/watchdog.pid" 2>/dev/null
	return $_ktd_fail
}

k8s_down() {
	_k8s_teardown down
}
