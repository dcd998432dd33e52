# Slow links for test nodes (tests/lib/nodes.sh), for benchmarks and tests that need a
# WAN rather than a veth: in the node's own network namespace, tc (tbf) holds the rate
# both ways (the node's egress on a delay device, its ingress through an ifb), and
# tests/lib/delayline.py delays what the node sends by the given time (the kernel here
# has no sch_netem). So a round trip to the node takes the delay, and a transfer the rate.
#
#   . tests/lib/nodes.sh; . tests/lib/linkshape.sh
#   link_shape I RATE DELAY_MS     e.g. link_shape 1 100mbit 20
#   link_unshape I                 back to the plain veth (also done by nodes_down)
#
# Root only, like the nodes. Tools: ip, tc (iproute2), python3.

_linkshape_dir=$(cd "$(dirname "${0:-.}")" 2>/dev/null && pwd)

_link_tbf() {
	# A burst of 64 KiB and at most 50 ms of queue: a link, not a bucket.
	tc -n "$1" qdisc add dev "$2" root tbf rate "$3" burst 64kb latency 50ms
}

link_shape() {
	_ls_i=$1 _ls_rate=$2 _ls_delay=$3
	_ls_ns=$(nodes_netns "$_ls_i")
	_ls_d=$NODES_DIR/tn$_ls_i
	_ls_py=${LINKSHAPE_DELAYLINE:-$SRC_DIR/tests/lib/delayline.py}
	[ -f "$_ls_py" ] || _ls_py=$_linkshape_dir/delayline.py
	link_unshape "$_ls_i"
	# Replies leave by the delay device, requests come in by eth0: no reverse-path check.
	ip netns exec "$_ls_ns" sysctl -q -w net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.eth0.rp_filter=0 || return 1
	ip -n "$_ls_ns" tuntap add dev dl0 mode tun || return 1
	ip netns exec "$_ls_ns" python3 "$_ls_py" dl0 eth0 "$_ls_delay" >"$_ls_d/delayline.out" 2>&1 &
	echo $! >"$_ls_d/delayline.pid"
	_ls_n=0
	until grep -q ready "$_ls_d/delayline.out" 2>/dev/null; do
		_ls_n=$((_ls_n + 1))
		[ $_ls_n -lt 100 ] || { echo "linkshape: the delay line did not start" >&2; return 1; }
		sleep 0.05
	done
	ip -n "$_ls_ns" link set dl0 up &&
		ip -n "$_ls_ns" route add "$NODES_NET.1/32" dev dl0 src "$(nodes_ip "$_ls_i")" &&
		_link_tbf "$_ls_ns" dl0 "$_ls_rate" &&
		ip -n "$_ls_ns" link add ifb0 type ifb &&
		ip -n "$_ls_ns" link set ifb0 up &&
		tc -n "$_ls_ns" qdisc add dev eth0 handle ffff: ingress &&
		tc -n "$_ls_ns" filter add dev eth0 parent ffff: protocol all u32 match u32 0 0 \
			action mirred egress redirect dev ifb0 &&
		_link_tbf "$_ls_ns" ifb0 "$_ls_rate"
}

link_unshape() {
	_lu_ns=$(nodes_netns "$1")
	_lu_d=$NODES_DIR/tn$1
	if [ -f "$_lu_d/delayline.pid" ]; then
		kill "$(cat "$_lu_d/delayline.pid")" 2>/dev/null
		rm -f "$_lu_d/delayline.pid"
	fi
	ip -n "$_lu_ns" route del "$NODES_NET.1/32" dev dl0 2>/dev/null
	ip -n "$_lu_ns" link del dl0 2>/dev/null
	tc -n "$_lu_ns" qdisc del dev eth0 ingress 2>/dev/null
	ip -n "$_lu_ns" link del ifb0 2>/dev/null
	:
}
