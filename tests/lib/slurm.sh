# A real Slurm for skiff's tests and benchmarks: munged, slurmctld and slurmds started
# by the caller (root), with a private munge key and socket and a private slurm.conf
# (nothing in /etc is read or changed). See docs/testing.md and docs/infra-slurm.md.
#
#   . "$SRC_DIR/tests/lib/nodes.sh"      # only for slurm_start with gang nodes
#   . "$SRC_DIR/tests/lib/slurm.sh"
#   slurm_install_deps || exit 1        # apt-get install slurm-wlm munge when missing
#   nodes_up 3                          # optional: network namespaces for tn1..tn3
#   slurm_start DIR [N]                 # N = 0 (default): partition solo, node tn0 only
#   ...                                 # N > 0: also partition gang, tn1..tnN (nodes_up N)
#   slurm_stop                          # scancel everything, stop the daemons by pid
#
# Node tn0 is a slurmd in this machine's network namespace. tnI (I >= 1) is a slurmd in
# node I's network namespace of tests/lib/nodes.sh (10.200.0.(10+I), hostname tnI); the
# controller then listens on the bridge (10.200.0.1). SLURM_CONF is exported; the ports
# are SLURM_PORT (default 16817) and SLURM_PORT + 1.

_slurm_pkgs="slurm-wlm munge"
. "${SRC_DIR:?tests/lib/slurm.sh: set SRC_DIR to the source tree first}/tests/lib/packages.sh"


# Installs slurm-wlm and munge (serialised with nodes.sh's installs; no service started).
slurm_install_deps() {
	# shellcheck disable=SC2086 # a list of names
	pkg_install $_slurm_pkgs
}

# _slurm_wait COND TIMEOUT_S: poll every 0.1 s.
_slurm_wait() {
	_sw_end=$(($(date +%s) + $2))
	while ! eval "$1"; do
		[ "$(date +%s)" -lt "$_sw_end" ] || return 1
		sleep 0.1
	done
}

slurm_start() {
	SLURM_DIR=$1
	_ss_n=${2:-0}
	_ss_port=${SLURM_PORT:-16817}
	SLURM_CONF=$SLURM_DIR/slurm.conf
	SLURM_DAEMONS=$SLURM_DIR/daemons
	export SLURM_CONF SLURM_DIR SLURM_DAEMONS
	mkdir -p "$SLURM_DIR/munge" "$SLURM_DIR/state" "$SLURM_DIR/log" || return 1
	_ss_nodes=tn0
	_ss_i=1
	while [ "$_ss_i" -le "$_ss_n" ]; do
		_ss_nodes="$_ss_nodes tn$_ss_i"
		_ss_i=$((_ss_i + 1))
	done
	for _ss_x in $_ss_nodes; do mkdir -p "$SLURM_DIR/spool/$_ss_x" || return 1; done
	# The socket's dir (and every dir above it) must be o+x, else "Socket is inaccessible".
	chmod 755 "$SLURM_DIR" "$SLURM_DIR/munge" || return 1
	mungekey -c -k "$SLURM_DIR/munge/munge.key" || return 1
	if [ "$_ss_n" -gt 0 ]; then
		# slurmds in other network namespaces reach the controller on the bridge.
		_ss_ctld="$(hostname -s)(${NODES_NET:-10.200.0}.1)"
		_ss_addr0=${NODES_NET:-10.200.0}.1
	else
		_ss_ctld=localhost
		_ss_addr0=127.0.0.1
	fi
	{
		echo "ClusterName=sktest"
		echo "SlurmctldHost=$_ss_ctld"
		echo "SlurmctldPort=$_ss_port"
		echo "SlurmdPort=$((_ss_port + 1))"
		echo "SlurmUser=root"
		echo "SlurmdUser=root"
		echo "AuthType=auth/munge"
		echo "CredType=cred/munge"
		echo "AuthInfo=socket=$SLURM_DIR/munge/munge.socket"
		echo "MpiDefault=none"
		echo "MailProg=/bin/true"
		echo "ProctrackType=proctrack/linuxproc"
		echo "TaskPlugin=task/none"
		echo "SelectType=select/cons_tres"
		echo "SelectTypeParameters=CR_Core"
		echo "SwitchType=switch/none"
		echo "JobAcctGatherType=jobacct_gather/none"
		echo "AccountingStorageType=accounting_storage/none"
		echo "JobCompType=jobcomp/none"
		echo "SchedulerType=sched/backfill"
		echo "ReturnToService=2"
		echo "# CPUs= may exceed this machine's cores"
		echo "SlurmdParameters=config_overrides"
		echo "StateSaveLocation=$SLURM_DIR/state"
		echo "SlurmdSpoolDir=$SLURM_DIR/spool/%n"
		echo "SlurmctldPidFile=$SLURM_DIR/slurmctld.pid"
		echo "SlurmdPidFile=$SLURM_DIR/slurmd.%n.pid"
		echo "SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log"
		echo "SlurmdLogFile=$SLURM_DIR/log/slurmd.%n.log"
		echo "SlurmctldTimeout=30"
		echo "SlurmdTimeout=30"
		echo "InactiveLimit=0"
		echo "Waittime=0"
		echo "MinJobAge=30"
		echo "KillWait=2"
		echo "NodeName=tn0 NodeAddr=$_ss_addr0 CPUs=4 RealMemory=2000 State=UNKNOWN"
		[ "$_ss_n" = 0 ] || echo "NodeName=tn[1-$_ss_n] NodeAddr=${NODES_NET:-10.200.0}.[11-$((10 + _ss_n))] CPUs=2 RealMemory=1000 State=UNKNOWN"
		echo "PartitionName=solo Nodes=tn0 Default=YES MaxTime=INFINITE State=UP"
		[ "$_ss_n" = 0 ] || echo "PartitionName=gang Nodes=tn[1-$_ss_n] MaxTime=INFINITE State=UP"
	} >"$SLURM_CONF" || return 1
	munged -F --socket="$SLURM_DIR/munge/munge.socket" --key-file="$SLURM_DIR/munge/munge.key" \
		--log-file="$SLURM_DIR/log/munged.log" --pid-file="$SLURM_DIR/munged.pid" \
		--seed-file="$SLURM_DIR/munge.seed" </dev/null >>"$SLURM_DIR/log/munged.err" 2>&1 &
	echo "munged $!" >>"$SLURM_DAEMONS"
	_slurm_wait "[ -S '$SLURM_DIR/munge/munge.socket' ]" 10 ||
		{ echo "slurm: munged did not start: $(tail -n 3 "$SLURM_DIR/log/munged.err")" >&2; return 1; }
	slurmctld -D -f "$SLURM_CONF" </dev/null >>"$SLURM_DIR/log/slurmctld.out" 2>&1 &
	echo "slurmctld $!" >>"$SLURM_DAEMONS"
	slurmd -D -N tn0 -f "$SLURM_CONF" </dev/null >>"$SLURM_DIR/log/slurmd.tn0.out" 2>&1 &
	echo "slurmd $!" >>"$SLURM_DAEMONS"
	# nsenter, not `ip netns exec`, which remounts /sys and hides /sys/fs/cgroup from slurmd.
	_ss_i=1
	while [ "$_ss_i" -le "$_ss_n" ]; do
		nsenter --net="/run/netns/$(nodes_netns "$_ss_i")" unshare --uts \
			sh -c "hostname tn$_ss_i && exec slurmd -D -N tn$_ss_i -f '$SLURM_CONF'" \
			</dev/null >>"$SLURM_DIR/log/slurmd.tn$_ss_i.out" 2>&1 &
		echo "slurmd $!" >>"$SLURM_DAEMONS"
		_ss_i=$((_ss_i + 1))
	done
	_slurm_wait '[ "$(sinfo -h -o %T 2>/dev/null | sort -u)" = idle ]' 30 ||
		{ echo "slurm: the nodes are not idle: $(sinfo -h 2>&1 | tr '\n' ' ')" >&2; return 1; }
}

# _slurm_alive PID: it runs (a zombie does not count: our shell may reap it late).
_slurm_alive() {
	_sa=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	case $_sa in '' | Z | X | x) return 1 ;; esac
}

# Cancels every job, then stops the slurmds, slurmctld and munged (in that order) by pid.
slurm_stop() {
	[ -n "${SLURM_DAEMONS:-}" ] && [ -f "$SLURM_DAEMONS" ] || return 0
	for _st_j in $(squeue -h -o %i 2>/dev/null); do scancel "$_st_j" 2>/dev/null; done
	for _st_d in slurmd slurmctld munged; do
		for _st_p in $(awk -v d="$_st_d" '$1 == d { print $2 }' "$SLURM_DAEMONS"); do
			# nsenter and unshare exec: the pid is the daemon's own.
			kill "$_st_p" 2>/dev/null || continue
			_st_n=50
			while _slurm_alive "$_st_p" && [ "$_st_n" -gt 0 ]; do
				_st_n=$((_st_n - 1))
				sleep 0.1
			done
			kill -KILL "$_st_p" 2>/dev/null
		done
	done
	rm -f "$SLURM_DAEMONS"
}
