# Rootful Podman with every piece of state under one directory, for the container tests
# and benchmarks (the settings of shared/notes/test-infra.md, section 4: runc, not crun,
# on this host's hybrid cgroups; ulimits within the hard limit; no network; file events).
#
#   . tests/lib/podman.sh
#   podman_private DIR        write DIR/containers.conf and DIR/storage.conf, export
#                             CONTAINERS_CONF and CONTAINERS_STORAGE_CONF
#   podman_private_down DIR   remove every container and image, unmount what podman left
#                             under DIR, and the host paths podman made that were not there
#   busybox_image DIR IMAGE   busybox_rootfs DIR (tests/lib/container.sh, sourced first),
#                             imported as IMAGE

podman_private() {
	_pm=$1
	mkdir -p "$_pm/run" "$_pm/tmp" "$_pm/root" "$_pm/netconf" || return 1
	cat >"$_pm/containers.conf" <<-EOF || return 1
	[containers]
	netns = "none"
	log_driver = "k8s-file"
	default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
	[engine]
	cgroup_manager = "cgroupfs"
	events_logger = "file"
	events_logfile_path = "$_pm/run/events.log"
	runtime = "runc"
	tmp_dir = "$_pm/tmp"
	static_dir = "$_pm/root/libpod"
	volume_path = "$_pm/root/volumes"
	[network]
	network_config_dir = "$_pm/netconf"
	EOF
	printf '[storage]\ndriver = "overlay"\nrunroot = "%s/run"\ngraphroot = "%s/root"\n' \
		"$_pm" "$_pm" >"$_pm/storage.conf" || return 1
	export CONTAINERS_CONF="$_pm/containers.conf" CONTAINERS_STORAGE_CONF="$_pm/storage.conf"
	# Podman creates these even with private roots: removed after, unless already there.
	PODMAN_LEFT=
	for _f in /var/lib/containers /var/lib/containers/cache/blob-info-cache-v1.boltdb \
		/run/containers /run/containers/networks; do
		[ -e "$_f" ] || PODMAN_LEFT="$PODMAN_LEFT $_f"
	done
}

podman_private_down() {
	podman rm -a -f -t 0 >/dev/null 2>&1
	podman image rm -a -f >/dev/null 2>&1
	# Anything podman left mounted under the directory, deepest first.
	awk -v t="$1/" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r _m; do umount -l "$_m"; done
	# shellcheck disable=SC2086
	[ -z "${PODMAN_LEFT:-}" ] || rm -rf $PODMAN_LEFT
}

busybox_image() {
	busybox_rootfs "$1" && podman import --change 'CMD ["/bin/sh"]' "$1.tar" "$2" >/dev/null
}
