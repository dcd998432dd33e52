#!/bin/sh
# Every program the suite runs comes from one list, tests/packages.list, that make test
# installs (tests/lib/packages.sh): a new machine has only what Debian always has, and a
# test that calls rsync, clang-format or valgrind without the list naming it passes only
# where somebody installed it by hand. tests/lint/tools.py reads the scripts' commands.
. "$(dirname "$0")/lib.sh"

test_lazy_prereq DPKG 'command -v dpkg-query'

test_expect_success PYTHON3,DPKG 'every command the scripts run is listed or on every Debian system' '
	if ! python3 "$SRC_DIR/tests/lint/tools.py" >out 2>&1; then cat out; false; fi
'

test_expect_success PYTHON3,DPKG 'a script that runs a program no list installs fails the check' '
	mkdir -p tree &&
	cp -R "$SRC_DIR/tests" tree/tests && mkdir -p tree/.ci && cp "$SRC_DIR/.ci/run" tree/.ci/ &&
	grep -v "^rsync " "$SRC_DIR/tests/packages.list" >tree/tests/packages.list &&
	! python3 "$SRC_DIR/tests/lint/tools.py" --top tree >out 2>&1 &&
	grep "tests/t/t0612-ssh-config.sh:[0-9]*: rsync: " out &&
	printf "#!/bin/sh\nfrobnicate-tool --now\ncommand -v frobnicate-tool || exit 1\n" \
		>tree/tests/t/t9999-x.sh &&
	! python3 "$SRC_DIR/tests/lint/tools.py" --top tree >out 2>&1 &&
	grep "t9999-x.sh:3: frobnicate-tool: checked for, but no list installs it" out
'

test_expect_success 'a package the list does not name is refused by the installer' '
	. "$SRC_DIR/tests/lib/packages.sh" &&
	! pkg_install frobnicate-pkg 2>err &&
	grep "frobnicate-pkg is not in .*packages.list" err
'

# What make test installed (as root) is there: each command of the group test resolves.
test_expect_success ROOT 'the commands of the group test are all installed' '
	. "$SRC_DIR/tests/lib/packages.sh" &&
	pkg_install $(pkg_group test) &&
	awk "!/^[ \t]*#/ && \$2 == \"test\" { for (i = 3; i <= NF; i++) print \$i }" \
		"$SRC_DIR/tests/packages.list" >cmds &&
	test -s cmds &&
	while read -r c; do
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			command -v "$c" >/dev/null || { echo "missing: $c"; exit 1; }
	done <cmds
'

test_expect_success 'no two scripts share a number' '
	ls "$SRC_DIR"/tests/t/ | sed -n "s/^\(t[0-9][0-9][0-9][0-9]\)-.*\.sh\$/\1/p" >nums &&
	test "$(wc -l <nums)" -gt 30 &&
	sort nums | uniq -d >dups &&
	cat dups && test ! -s dups
'

test_done
