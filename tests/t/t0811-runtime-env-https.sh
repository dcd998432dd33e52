#!/bin/sh
# Runtime envs from https:// URLs (working_dir archives, pip wheels) through the download
# manager, against a real HTTPS server on loopback with a test CA (tests/lib/https.sh).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/https.sh"
. "$SRC_DIR/tests/lib/renv.sh"

https_need_tools || test_skip_all "needs openssl and python3 (and root to install them)"

PKI=$TRASH/pki
WWW=$TRASH/www
mkdir -p "$WWW"
https_make_certs "$PKI" || { echo "Bail out! cannot make test certificates"; exit 1; }
test_cleanup_hook() {
	skiff node cancel --all >/dev/null 2>&1
	skiff node down >/dev/null 2>&1
	https_stop_all
}
trap 'https_stop_all' EXIT
https_start "$PKI" srv "$WWW" || { echo "Bail out! cannot start the https server"; exit 1; }
U=https://localhost:$HTTPS_PORT/files
https_start "$PKI" self "$WWW" self || { echo "Bail out! cannot start the https server"; exit 1; }
SELF=https://localhost:$HTTPS_PORT/files
export U SELF PKI WWW

test_expect_success 'setup: a zipped working_dir and a wheel on the server, the CA in renv.conf' '
	mkdir -p src/proj && echo "print(\"remote main\")" >src/proj/main.py &&
	echo "WHO = \"remote\"" >src/proj/remote_mod.py &&
	(cd src && $PY -m zipfile -c "$WWW/proj.zip" proj) &&
	mkwheel skiffu 1.0 "$WWW" &&
	mkdir -p "$SKIFF_HOME" && {
		echo "no_index = 1"
		echo "ca_file = $PKI/ca.pem"
	} >"$SKIFF_HOME/renv.conf"
'

test_expect_success 'working_dir from an https URL and a pip wheel URL: fetched, unpacked, installed' '
	cat >j.yaml <<-EOF &&
	runtime_env:
	  working_dir: $U/proj.zip
	  pip: ["$U/skiffu-1.0-py3-none-any.whl"]
	run: |
	  python main.py
	  python -c "import remote_mod, skiffu; print(remote_mod.WHO, skiffu.VALUE)"
	EOF
	id=$(skiff node submit j.yaml) && skiff node logs $id >out &&
	grep -q "^remote main$" out && grep -q "^remote skiffu-1.0$" out &&
	test "$(grep -c "GET /files/proj.zip" "$PKI/srv.log")" = 1
'

test_expect_success 'a second job uses the cached download and unpacked dir: no request' '
	id=$(skiff node submit j.yaml) && skiff node logs $id >out &&
	grep -q "^remote main$" out &&
	test "$(grep -c "GET /files/proj.zip" "$PKI/srv.log")" = 1
'

test_expect_success 'a server certificate the CA did not sign is refused' '
	printf "runtime_env:\n  working_dir: $SELF/proj.zip\nrun: echo never\n" >self.yaml &&
	id=$(skiff node submit self.yaml) && expect_fail 100 done_ok $id &&
	[ "$(jfield $id status)" = FAILED_SETUP ] &&
	jfield $id reason | grep -q "step .packages." &&
	grep -q "certificate verify failed" "$SKIFF_HOME/logs/$id/setup.log" &&
	! grep -q "GET /files/proj.zip" "$PKI/self.log"
'

test_expect_success 'a URL whose sha256 does not match its pin is refused' '
	printf "runtime_env:\n  working_dir: \"$U/proj.zip?x#sha256=%064d\"\nrun: echo never\n" 0 >pin.yaml &&
	id=$(skiff node submit pin.yaml) && expect_fail 100 done_ok $id &&
	grep -q "sha256 mismatch" "$SKIFF_HOME/logs/$id/setup.log" &&
	good=$(sha256sum "$WWW/proj.zip" | cut -d" " -f1) &&
	printf "runtime_env:\n  working_dir: \"$U/proj.zip?y#sha256=$good\"\nrun: python3 main.py\n" >pin2.yaml &&
	id=$(skiff node submit pin2.yaml) && skiff node logs $id >out && grep -q "^remote main$" out
'

test_done
