#!/bin/sh
# File sync benchmarks against rsync: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/sync_bench.sh [--skiff build/skiff] [--runs 5] [--links "veth shaped"]
#                             [--rate 100mbit] [--delay 20] [--nodes-fs tmpfs|disk]
#                             [--only first,noop,delta,many,nodes,selfcopy]
#
# Root only: it starts three real sshd nodes with tests/lib/nodes.sh and tears them down at
# the end; rsync and the other peers come from tests/bench/setup.sh. The workdir is the one
# of issue 16 (5,004 files, about 125 MB: 50 folders of 100 text files of 0.2-8 KB and four
# incompressible 25 MB files). For each link (the plain veth, then a shaped one: tc tbf at
# --rate both ways and a --delay ms delay in each node's namespace, tests/lib/linkshape.sh)
# tests/bench/sync_bench.py measures, skiff and rsync in turn over the same link:
#   first     a first sync: the `sync` step of `skiff exec` vs `rsync -a` into an empty dir
#   noop      nothing changed: all of `skiff exec C task` vs a no-op `rsync -a`
#   delta     4 KiB changed inside one 25 MB file: `skiff exec` vs `rsync -a`
#   many      100 small files edited and 4 KiB changed in each 25 MB file: the same
#   nodes     a first sync to 3 nodes at once (cl_sync_many) vs to 1, and vs 3 rsyncs;
#             with the CPU-bound floor and the machine's CPU cost of filling fresh pages
#             with the three trees' bytes (dd into new files, then rewriting them)
#   selfcopy  a fresh node: `skiff launch -d` until the job is RUNNING vs cat-copying the
#             binary there (over a warm master and over a new connection)
# then prints one table of every row: case, skiff, rsync (or the floor), ratio.
#
# The nodes' homes are on a tmpfs of their own by default (--nodes-fs tmpfs): on this
# machine's root ext4, which has no journal, each new inode costs a scan of the inodes
# freed in the last seconds (recently_deleted()), so a first sync of 5,000 files took
# from 0.5 s to 2 s for either tool depending on what the machine deleted before. Both
# tools write to the same storage either way; --nodes-fs disk puts them back on /tmp.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skiff=build/skiff runs=5 links="veth shaped" rate=100mbit delay=20 nodes_fs=tmpfs
only=first,noop,delta,many,nodes,selfcopy
while [ $# -gt 0 ]; do
	case $1 in
	--skiff) skiff=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--links) links=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--delay) delay=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--nodes-fs) nodes_fs=$2; shift 2 ;;
	-h|--help) sed -n '2,29p' "$0"; exit 0 ;;
	*) echo "sync_bench: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case $skiff in /*) ;; *) skiff=$root/$skiff ;; esac
[ -x "$skiff" ] || { echo "sync_bench: no executable $skiff (build it first)" >&2; exit 1; }
SRC_DIR=$root
export SRC_DIR
nfs=
case $nodes_fs in
tmpfs)
	# Short: nodes.sh keeps ControlPath sockets under it.
	nfs=/tmp/sbfs.$$
	mkdir -p "$nfs" && mount -t tmpfs -o size=16g,mode=0755 sbfs "$nfs" ||
		{ echo "sync_bench: cannot mount a tmpfs on $nfs (root?)" >&2; exit 1; }
	trap 'umount "$nfs"; rmdir "$nfs"' EXIT
	TMPDIR=$nfs
	export TMPDIR ;;
disk) ;;
*) echo "sync_bench: --nodes-fs is tmpfs or disk" >&2; exit 2 ;;
esac
# shellcheck source=tests/lib/nodes.sh
. "$root/tests/lib/nodes.sh"
# shellcheck source=tests/lib/linkshape.sh
. "$root/tests/lib/linkshape.sh"
nodes_require_root || exit 1
nodes_install_deps || exit 1
"$here/setup.sh" || exit 1
work=$(mktemp -d /tmp/sbench.XXXXXX) || exit 1

# shellcheck disable=SC2317 # called by the trap
bench_cleanup() {
	trap - EXIT INT TERM
	for i in 1 2 3; do link_unshape $i; done
	nodes_down
	rm -rf "$work"
	[ -z "$nfs" ] || nfs_unmount
}

# The nodes' last processes may still be leaving it: a few tries, then a lazy unmount.
nfs_unmount() {
	_nu=0
	until umount "$nfs" 2>/dev/null; do
		_nu=$((_nu + 1))
		[ $_nu -lt 50 ] || { umount -l "$nfs"; break; }
		sleep 0.1
	done
	rmdir "$nfs"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

nodes_up 3 || exit 1
echo "sync_bench: $("$skiff" version | head -n 1); $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg);" \
	"rsync $(rsync --version | head -n 1 | awk '{print $3}'); runs $runs; nodes' homes on $nodes_fs"
python3 "$here/sync_bench.py" --make-tree "$work/tree" || exit 1
outs= rc=0
for link in $links; do
	if [ "$link" = shaped ]; then
		for i in 1 2 3; do link_shape $i "$rate" "$delay" || exit 1; done
		echo "sync_bench: shaped: $rate each way, $delay ms delay (round trip" \
			"$(ip netns exec "$(nodes_netns 1)" python3 -c "
import socket, time
s = socket.socket(); t = time.time(); s.connect_ex(('$NODES_NET.1', 9)); print('%.0f ms' % ((time.time() - t) * 1000))")"
	fi
	sel=$only
	# The fresh-node figure is the slow link's (issue 16, point 5).
	[ "$link" = shaped ] || sel=$(echo "$only" | tr ',' '\n' | grep -vx selfcopy | paste -sd, -)
	[ -n "$sel" ] || continue
	python3 "$here/sync_bench.py" --skiff "$skiff" --link "$link" --tree "$work/tree" \
		--runs "$runs" --only "$sel" --out "$work/$link.json" || rc=1
	outs="$outs $work/$link.json"
done
# shellcheck disable=SC2086 # a list of files
[ -z "$outs" ] || python3 "$here/sync_bench.py" --report $outs
exit $rc
