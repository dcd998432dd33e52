#!/bin/sh
# Runtime envs on a node: real `python3 -m venv` and pip installing wheels built here from
# tiny packages (no network index: --no-index --find-links), the cache and its locks.
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/renv.sh"

test_cleanup_hook() {
	skiff down r1 >/dev/null 2>&1
	skiff node cancel --all >/dev/null 2>&1
	skiff node down >/dev/null 2>&1
	pkill -KILL -f "$TRASH" 2>/dev/null
}

builds() {
	grep -c " build $1" "$SKIFF_HOME/envs/builds.log" 2>/dev/null || true
}

key_of() {
	sed -n 's/.*env \([0-9a-f]\{12\}\).*/\1/p' "$SKIFF_HOME/logs/$1/setup.log" | head -1
}

test_expect_success 'setup: wheels, node settings' '
	mkwheel skiffa 1.0 wh && mkwheel skiffb 2.0 wh skiffa && mkwheel skiffc 3.0 wh &&
	mkdir -p "$SKIFF_HOME" && {
		echo "no_index = 1"
		echo "find_links = $TRASH/wh"
	} >"$SKIFF_HOME/renv.conf" &&
	mkdir -p wd mylib && echo "print(\"main of wd\")" >wd/main.py &&
	echo "skip me" >wd/ignored.txt && echo "ignored.txt" >wd/.gitignore &&
	echo "NAME = \"mylib\"" >mylib/__init__.py
'

test_expect_success 'a job runs in its venv, working_dir and py_modules; SETTING_UP while it builds' '
	cat >j1.yaml <<-\EOF &&
	runtime_env:
	  pip: [skiffb]
	  working_dir: wd
	  py_modules: [mylib]
	  env_vars: {GREETING: hi}
	run: |
	  python -c "import skiffb, skiffa, mylib, sys; print(skiffb.VALUE, skiffa.VALUE, mylib.NAME, sys.prefix == \"$VIRTUAL_ENV\")"
	  python main.py
	  echo "cwd=$(pwd) greeting=$GREETING"
	  ls
	EOF
	id=$(skiff node submit j1.yaml) &&
	wait_for "[ \"\$(jfield $id status)\" = SETTING_UP ]" 20 &&
	skiff node logs $id >out &&
	grep -q "^skiffb-2.0 skiffa-1.0 mylib True$" out &&
	grep -q "^main of wd$" out &&
	grep -q "^cwd=$SKIFF_HOME/pkgs/dir/[0-9a-f]* greeting=hi$" out &&
	! grep -q ignored.txt out &&
	grep -q "step: pip install" "$SKIFF_HOME/logs/$id/setup.log" &&
	[ "$(jfield $id status)" = SUCCEEDED ]
'

test_expect_success 'same packages in another order, spelled otherwise: cache hit, even after a supervisor restart' '
	cat >j2.yaml <<-\EOF &&
	runtime_env:
	  pip: ["SkiffB", "skiffb"]
	run: python -c "import skiffb; print(skiffb.VALUE)"
	EOF
	skiff node down >/dev/null &&
	id=$(skiff node submit j2.yaml) && skiff node logs $id >out &&
	grep -q "^skiffb-2.0$" out &&
	grep -q "is built: reused" "$SKIFF_HOME/logs/$id/setup.log" &&
	k=$(key_of $id) && [ "$(builds $k)" = 1 ]
'

test_expect_success 'five jobs asking at once for a new env: one build, all succeed' '
	cat >j3.yaml <<-\EOF &&
	runtime_env:
	  pip: [skiffc, skiffa]
	run: python -c "import skiffc, skiffa; print(skiffc.VALUE)"
	EOF
	ids="" && for i in 1 2 3 4 5; do ids="$ids $(skiff node submit j3.yaml)" || return 1; done &&
	for id in $ids; do done_ok $id || return 1; done &&
	for id in $ids; do grep -q "^skiffc-3.0$" "$SKIFF_HOME/logs/$id/run.log" || return 1; done &&
	k=$(key_of $id) && [ "$(builds $k)" = 1 ] &&
	[ "$(cat "$SKIFF_HOME"/logs/*/setup.log | grep -c "building env $k")" = 1 ]
'

test_expect_success 'a changed requirements file gives a new env; the same contents elsewhere do not' '
	echo skiffa >req.txt && mkdir -p other && echo "  skiffa   # the same" >other/req2.txt &&
	printf "runtime_env:\n  pip: req.txt\nrun: python -c \"import skiffa\"\n" >r1.yaml &&
	printf "runtime_env:\n  pip: other/req2.txt\nrun: python -c \"import skiffa\"\n" >r2.yaml &&
	a=$(skiff node submit r1.yaml) && done_ok $a &&
	b=$(skiff node submit r2.yaml) && done_ok $b &&
	[ "$(key_of $a)" = "$(key_of $b)" ] &&
	echo skiffb >>req.txt &&
	c=$(skiff node submit r1.yaml) && done_ok $c &&
	[ "$(key_of $c)" != "$(key_of $a)" ] && [ "$(builds $(key_of $c))" = 1 ]
'

test_expect_success 'a local wheel is keyed by its bytes, not its name' '
	mkwheel skiffz 1.0 dist &&
	printf "runtime_env:\n  pip: [./dist/skiffz-1.0-py3-none-any.whl]\nrun: python -c \"import skiffz; print(skiffz.VALUE)\"\n" >w.yaml &&
	a=$(skiff node submit w.yaml) && done_ok $a &&
	rm dist/*.whl && mkwheel skiffz 1.0 dist skiffa &&
	b=$(skiff node submit w.yaml) && done_ok $b &&
	[ -n "$(key_of $a)" ] && [ "$(key_of $a)" != "$(key_of $b)" ]
'

test_expect_success 'a failed build fails the job, and is remembered: the next job fails at once' '
	printf "runtime_env:\n  pip: [no-such-package-xyz]\nrun: echo never\n" >bad.yaml &&
	a=$(skiff node submit bad.yaml) && expect_fail 100 done_ok $a &&
	[ "$(jfield $a status)" = FAILED_SETUP ] &&
	jfield $a reason | grep -q "step .pip install. (see .*setup.log)" &&
	b=$(skiff node submit bad.yaml) && expect_fail 100 done_ok $b &&
	jfield $b reason | grep -q "pip install failed" &&
	! grep -q "step: pip install" "$SKIFF_HOME/logs/$b/setup.log" &&
	[ "$(grep -c " failed " "$SKIFF_HOME/envs/builds.log")" = 1 ]
'

test_expect_success 'setup_timeout_seconds kills the build and names the step' '
	mkdir -p slow && cat >slow/python3 <<-EOF && chmod +x slow/python3 &&
	#!/bin/sh
	case "\$*" in *"-m venv"*) exec $PY -c "import time; time.sleep(300)" t0810-slow-marker;; esac
	exec $PY "\$@"
	EOF
	printf "runtime_env:\n  python: $TRASH/slow/python3\n  pip: [skiffa==1.0]\n  config: {setup_timeout_seconds: 2}\nrun: echo never\n" >slow.yaml &&
	id=$(skiff node submit slow.yaml) && expect_fail 100 done_ok $id &&
	[ "$(jfield $id status)" = FAILED_SETUP ] &&
	jfield $id reason | grep -q "timed out after 2 s in step .venv." &&
	wait_for "! pgrep -f t0810-slow-marker >/dev/null" 10
'

test_expect_success 'a missing interpreter is an error naming every place searched' '
	printf "runtime_env:\n  python: \"3.99\"\nrun: echo never\n" >nopy.yaml &&
	id=$(skiff node submit nopy.yaml) && expect_fail 100 done_ok $id &&
	jfield $id reason >reason &&
	grep -q "no working .python3.99. (Python 3.99) found; searched: .*/usr/bin .*pyenv/versions/3.99" reason
'

test_expect_success 'python as a version, pip_check, and pip pinned with pip_version' '
	[ -f /usr/share/python-wheels/pip-23.0.1-py3-none-any.whl ] &&
	cat >pv.yaml <<-\EOF &&
	runtime_env:
	  python: "3.11"
	  pip:
	    packages: [skiffa]
	    pip_check: true
	    pip_version: "==23.0.1"
	run: |
	  python -c "import sys, skiffa; print(sys.version_info[:2] == (3, 11))"
	  pip --version
	EOF
	SKIFF_PIP_FIND_LINKS="$TRASH/wh /usr/share/python-wheels" skiff node down >/dev/null &&
	SKIFF_PIP_FIND_LINKS="$TRASH/wh /usr/share/python-wheels" skiff node up >/dev/null &&
	id=$(skiff node submit pv.yaml) && skiff node logs $id >out &&
	grep -q "^True$" out && grep -q "^pip 23.0.1 from $SKIFF_HOME/envs/" out &&
	grep -q "step: pip version" "$SKIFF_HOME/logs/$id/setup.log" &&
	grep -q "step: pip check" "$SKIFF_HOME/logs/$id/setup.log" &&
	skiff node down >/dev/null
'

test_expect_success 'eviction above the size limit skips envs and packages in use, least recently used first' '
	echo "max_size_mb = 0" >>"$SKIFF_HOME/renv.conf" &&
	printf "runtime_env:\n  pip: [skiffa]\n  working_dir: wd\nrun: sleep 300\n" >hold.yaml &&
	h=$(skiff node submit hold.yaml) &&
	wait_for "[ \"\$(jfield $h status)\" = RUNNING ]" 30 &&
	kh=$(key_of $h) && [ -n "$kh" ] &&
	printf "runtime_env:\n  pip: [skiffc]\nrun: \"true\"\n" >new.yaml &&
	n=$(skiff node submit new.yaml) && done_ok $n &&
	kb=$(key_of 1) && [ -n "$kb" ] &&
	[ -n "$(ls -d "$SKIFF_HOME"/envs/$kh*/ 2>/dev/null)" ] &&
	[ -z "$(ls -d "$SKIFF_HOME"/envs/$kb*/ 2>/dev/null)" ] &&
	grep -q " evict $kb" "$SKIFF_HOME/envs/builds.log" &&
	! grep -q " evict $kh" "$SKIFF_HOME/envs/builds.log" &&
	wdk=$(basename "$(sed -n "s/^cwd=\([^ ]*\) .*/\1/p" "$SKIFF_HOME/logs/1/run.log")") &&
	modk=$(ls "$SKIFF_HOME/pkgs/mod" | sed -n "s/-mylib\$//p") && [ -n "$modk" ] &&
	[ -d "$SKIFF_HOME/pkgs/dir/$wdk" ] && ! grep -q " evict-pkg $wdk" "$SKIFF_HOME/envs/builds.log" &&
	grep -q " evict-pkg $modk" "$SKIFF_HOME/envs/builds.log" && [ ! -d "$SKIFF_HOME/pkgs/dir/$modk" ] &&
	skiff node cancel $h >/dev/null && expect_fail 103 done_ok $h &&
	printf "runtime_env:\n  pip: [skiffb]\nrun: \"true\"\n" >new2.yaml &&
	m=$(skiff node submit new2.yaml) && done_ok $m &&
	grep -q " evict $kh" "$SKIFF_HOME/envs/builds.log"
'

test_expect_success 'launch packs working_dir and py_modules, ships them once per node' '
	printf "runtime_env:\n  working_dir: wd\n  py_modules: [./mylib/]\nrun: |\n  python3 main.py\n  python3 -c \"import mylib; print(mylib.NAME)\"\n" >l.yaml &&
	skiff launch -c r1 l.yaml >out 2>err && grep -q "^main of wd$" out && grep -q "^mylib$" out &&
	store="$SKIFF_HOME/local/r1/0/.skiff/pkgs/tgz" &&
	[ "$(ls "$store" | grep -c "^[0-9a-f]\{64\}\.tar\.gz$")" = 2 ] &&
	ls -i "$store" >before &&
	skiff launch -c r1 l.yaml >out 2>err && grep -q "^mylib$" out &&
	ls -i "$store" >after && test_cmp before after
'

test_done
