# The host of a managed-jobs controller on a cluster of its own, for the tests that put it
# on test node tn1 (tests/lib/nodes.sh, sourced first): t0760, t0761.
#
#   ctl CMD...           `skiff CMD...` on tn1 in the controller's home, with no launcher
#   ctl_field ID FIELD   one field of managed job ID, from `jobs queue --json` asked there
#   ctl_pid, keeper_pid  the pids in the controller's and the keeper's lock files

CTL_HOME='$HOME/.skiff/jobs-controller'

ctl() {
	nodes_ssh 1 "SKIFF_HOME=$CTL_HOME SKIFF_JOBS_ON_CONTROLLER=1 \$HOME/.skiff/bin/skiff $*"
}

ctl_field() {
	ctl jobs queue --json 2>/dev/null | python3 -c "
import json,sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print(j['$2'])"
}

ctl_pid() { nodes_ssh 1 "cat $CTL_HOME/jobs/controller.lock 2>/dev/null" | head -n 1; }
keeper_pid() { nodes_ssh 1 "cat $CTL_HOME/jobs/keeper.lock 2>/dev/null" | head -n 1; }
