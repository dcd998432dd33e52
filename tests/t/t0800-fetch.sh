#!/bin/sh
# The download manager (bootstrap/fetch/fetch.c, docs/fetch.md) through `skiff __fetch`, against
# real HTTPS servers on loopback (tests/lib/https-server.py) with a test CA.
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/https.sh"

https_need_tools || test_skip_all "needs openssl and python3 (and root to install them)"

PKI=$TRASH/pki
WWW=$TRASH/www
mkdir -p "$WWW"
head -c 300000 /dev/urandom >"$WWW/big.bin"
echo hello >"$WWW/hello.txt"
https_make_certs "$PKI" || { echo "Bail out! cannot make test certificates"; exit 1; }
test_cleanup_hook() { https_stop_all; }
trap 'https_stop_all' EXIT
https_start "$PKI" srv "$WWW" || { echo "Bail out! cannot start the https server"; exit 1; }
U=https://localhost:$HTTPS_PORT
PORT=$HTTPS_PORT
https_start "$PKI" self "$WWW" self || { echo "Bail out! cannot start the https server"; exit 1; }
SELF_PORT=$HTTPS_PORT
# Stalled responses hold a server thread for a minute: they get a server of their own.
https_start "$PKI" stall "$WWW" || { echo "Bail out! cannot start the https server"; exit 1; }
STALL_PORT=$HTTPS_PORT
CA="--ca $PKI/ca.pem"
BIG_SHA=$(sha256sum "$WWW/big.bin" | cut -d" " -f1)
HELLO_SHA=$(sha256sum "$WWW/hello.txt" | cut -d" " -f1)
export PKI WWW U PORT SELF_PORT STALL_PORT CA BIG_SHA HELLO_SHA

# requests LOGNAME PATH: how many times the server was asked for PATH.
requests() {
	grep -cxF "GET $2" "$PKI/$1.log"
}

# url_dir CACHE URL: the cache directory of URL.
url_dir() {
	echo "$(realpath "$1")/by-url/$(printf %s "$2" | sha256sum | cut -d" " -f1)"
}

# no_files DIR: DIR holds no complete or partial download.
no_files() {
	! ls -a "$1" 2>/dev/null | grep -E '^([0-9a-f]{64}|\.tmp-.*)$'
}

test_expect_success 'a download lands content-addressed under by-url/<sha256 of the URL>' '
	p=$(skiff __fetch $CA "$U/files/big.bin" cache) &&
	test "$p" = "$(url_dir cache "$U/files/big.bin")/$BIG_SHA" &&
	cmp "$p" "$WWW/big.bin" &&
	test "$(requests srv /files/big.bin)" = 1 &&
	! ls -a "$(dirname "$p")" | grep "^\.tmp-"
'

test_expect_success 'a second fetch is a cache hit: the same file, no request' '
	p=$(skiff __fetch $CA "$U/files/big.bin" cache) &&
	test "$p" = "$(url_dir cache "$U/files/big.bin")/$BIG_SHA" &&
	test "$(requests srv /files/big.bin)" = 1
'

test_expect_success 'the CA bundle defaults to $SSL_CERT_FILE' '
	p=$(SSL_CERT_FILE="$PKI/ca.pem" skiff __fetch "$U/files/hello.txt" cache) &&
	test "$(cat "$p")" = hello
'

test_expect_success '20 concurrent fetches of one URL make one download and get one file' '
	pids= &&
	for i in $(seq 20); do
		skiff __fetch $CA "$U/slow/big.bin" c20 >out.$i 2>err.$i &
		pids="$pids $!"
	done &&
	for p in $pids; do wait $p || exit 1; done &&
	test "$(cat out.* | sort -u | wc -l)" = 1 &&
	test "$(cat out.1)" = "$(url_dir c20 "$U/slow/big.bin")/$BIG_SHA" &&
	test "$(requests srv /slow/big.bin)" = 1
'

# slot_fds PID...: how many slot files those processes hold open.
slot_fds() {
	for p; do ls -l "/proc/$p/fd" 2>/dev/null; done | grep -c "/cpar/slots/slot-"
}

test_expect_success 'at most --max-parallel downloads run at once across processes' '
	# /hold/ answers only once the test says so. 6 fetches with a limit of 3: 3 requests
	# reach the server; the other 3 processes wait for a slot (each has the 3 slot files
	# open: 3 + 3 * 3 = 12 open). Then everything is let go.
	pids= &&
	for i in 1 2 3 4 5 6; do
		"$SKIFF_BIN" __fetch $CA --max-parallel 3 "$U/hold/hello.txt?$i" cpar >par.$i &
		pids="$pids $!"
	done &&
	# Whatever the waits find, everything is let go before the verdict.
	{ wait_for "test \"\$(cat \"$PKI/srv.log.held\" 2>/dev/null)\" = 3" &&
		wait_for "test \$(slot_fds $pids) = 12"; rc=$?; } &&
	touch "$PKI/srv.log.release" &&
	test $rc = 0 &&
	for p in $pids; do wait $p || exit 1; done &&
	test "$(cat "$PKI/srv.log.max-held")" = 3 &&
	test "$(cat par.* | sort -u | wc -l)" = 6 &&
	ls cpar/slots >slots && test "$(wc -l <slots)" = 3
'

test_expect_success 'chunked transfer encoding (varied chunks, extensions, a trailer)' '
	p=$(skiff __fetch $CA "$U/chunked/big.bin" cache) &&
	test "$(basename "$p")" = "$BIG_SHA" && cmp "$p" "$WWW/big.bin"
'

test_expect_success 'a body without a length ends at the server'"'"'s close_notify' '
	p=$(skiff __fetch $CA "$U/close/big.bin" cache) &&
	cmp "$p" "$WWW/big.bin"
'

test_expect_success 'a certificate from a CA not in the CA file is refused, not retried' '
	expect_fail 1 skiff __fetch --ca "$PKI/other-ca.pem" "$U/files/hello.txt?other" c2 2>err &&
	grep "certificate verify failed for host .localhost.: .*not correctly signed" err &&
	! grep retrying err && test $(wc -l <err) = 1 &&
	test "$(requests srv "/files/hello.txt?other")" = 0
'

test_expect_success 'a self-signed server certificate is refused' '
	expect_fail 1 skiff __fetch $CA "https://localhost:$SELF_PORT/files/hello.txt" c2 2>err &&
	grep "certificate verify failed for host .localhost." err &&
	test "$(requests self /files/hello.txt)" = 0
'

test_expect_success 'a certificate for another host name is refused' '
	expect_fail 1 skiff __fetch $CA "https://127.0.0.1:$PORT/files/hello.txt" c2 2>err &&
	grep "certificate verify failed for host .127.0.0.1.: .*does not match" err
'

test_expect_success 'a sha256 pin: a match is kept, a mismatch is refused and leaves no file' '
	p=$(skiff __fetch $CA --sha256 "$HELLO_SHA" "$U/files/hello.txt?pin" cache) &&
	test "$(basename "$p")" = "$HELLO_SHA" &&
	expect_fail 1 skiff __fetch $CA --sha256 "$BIG_SHA" "$U/files/hello.txt?pin2" cache 2>err &&
	grep "sha256 mismatch: expected $BIG_SHA, got $HELLO_SHA" err &&
	no_files "$(url_dir cache "$U/files/hello.txt?pin2")" &&
	test "$(requests srv "/files/hello.txt?pin2")" = 1
'

test_expect_success 'the size limit refuses a long body (Content-Length and chunked)' '
	expect_fail 1 skiff __fetch $CA --max-bytes 1000 "$U/files/big.bin?lim" c3 2>err &&
	grep "body is 300000 bytes, over the limit of 1000 bytes" err &&
	no_files "$(url_dir c3 "$U/files/big.bin?lim")" &&
	expect_fail 1 skiff __fetch $CA --max-bytes 1000 "$U/chunked/big.bin?lim" c3 2>err &&
	grep "larger than the limit of 1000 bytes" err &&
	no_files "$(url_dir c3 "$U/chunked/big.bin?lim")" &&
	test "$(requests srv "/chunked/big.bin?lim")" = 1 &&
	expect_fail 1 skiff __fetch $CA --max-bytes 1000 "$U/files/big.bin" cache 2>err &&
	grep "cached file is 300000 bytes, over the limit" err
'

test_expect_success 'a redirect is followed; a redirect to http:// is refused' '
	p=$(skiff __fetch $CA "$U/redirect/files/hello.txt" cache) &&
	test "$(cat "$p")" = hello &&
	expect_fail 1 skiff __fetch $CA "$U/redirect-abs/http:/localhost:$PORT/files/hello.txt" \
		cache 2>err &&
	grep "redirect to a non-https URL refused: http://localhost:$PORT/files/hello.txt" err
'

test_expect_success 'a 404 fails at once, without retries' '
	expect_fail 1 skiff __fetch $CA "$U/files/missing" cache 2>err &&
	grep "HTTP 404 Not Found from $U/files/missing" err && ! grep retrying err &&
	test "$(requests srv /files/missing)" = 1
'

test_expect_success 'a 503 is retried with backoff, then the download succeeds' '
	p=$(skiff __fetch $CA "$U/flaky/2/hello.txt" cache 2>err) &&
	test "$(cat "$p")" = hello &&
	test "$(grep -c "HTTP 503 .*retrying in [0-9]* ms" err)" = 2 &&
	test "$(requests srv /flaky/2/hello.txt)" = 3
'

test_expect_success 'a stalled server hits the timeout; the attempt is retried' '
	S="https://localhost:$STALL_PORT/stall/big.bin" &&
	expect_fail 1 skiff __fetch $CA --timeout-ms 300 --retries 1 "$S" c4 2>err &&
	grep "retrying" err &&
	grep "no data for 300 ms (after 2 attempts)" err &&
	test "$(requests stall /stall/big.bin)" = 2 &&
	no_files "$(url_dir c4 "$S")"
'

# flock_waiters PID...: how many of those processes are blocked in flock().
flock_waiters() {
	for p; do grep -E "^[0-9]+: *-> FLOCK +ADVISORY +WRITE +$p " /proc/locks; done | wc -l
}

# flock_holder PID: the process holds a flock.
flock_holder() {
	grep -qE "^[0-9]+: FLOCK +ADVISORY +WRITE +$1 " /proc/locks
}

test_expect_success 'processes that waited on a failed download get its error' '
	# The test holds the URL lock, 5 fetches queue on it, then the lock is let go: the
	# first one gets the 404 and records it, the other 4 read it without a request.
	url="$U/files/missing-shared" &&
	d=$(url_dir c5 "$url") &&
	mkdir -p "$d" && mkfifo hold && : >"$d/lock" &&
	{ flock "$d/lock" cat hold & } &&
	holder=$! &&
	wait_for "flock_holder $holder" &&
	pids= &&
	for i in 1 2 3 4 5; do
		"$SKIFF_BIN" __fetch $CA "$url" c5 2>err.$i &
		pids="$pids $!"
	done &&
	{ wait_for "test \$(flock_waiters $pids) = 5"; rc=$?; } &&
	: 1<>hold && # lets the holder go (opening a fifo read-write never blocks)
	test $rc = 0 &&
	for p in $pids; do ! wait $p || exit 1; done &&
	grep "HTTP 404" err.* >/dev/null &&
	test "$(grep -l "another process" err.* | wc -l)" = 4 &&
	test "$(requests srv /files/missing-shared)" = 1
'

test_expect_success 'a download killed midway leaves no file and does not block the next' '
	S="https://localhost:$STALL_PORT/stall/big.bin?kill" &&
	d=$(url_dir c6 "$S") &&
	{ "$SKIFF_BIN" __fetch $CA "$S" c6 2>/dev/null & } &&
	pid=$! &&
	wait_for "ls -a \"$d\" 2>/dev/null | grep -q \"^\\.tmp-\"" &&
	wait_for "test \$(cat \"$d\"/.tmp-* | wc -c) = 150000" &&
	kill -9 $pid && ! wait $pid &&
	ls -a "$d" | grep -q "^\.tmp-" &&
	! ls "$d" | grep -E "^[0-9a-f]{64}$" &&
	expect_fail 1 skiff __fetch $CA --timeout-ms 200 --retries 0 "$S" c6 2>err &&
	grep "no data for 200 ms" err &&
	no_files "$d"
'

test_expect_success 'bad arguments are refused' '
	expect_fail 1 skiff __fetch $CA "http://localhost:$PORT/files/hello.txt" cache 2>err &&
	grep "unsupported URL scheme .http. (only https)" err &&
	expect_fail 1 skiff __fetch $CA --sha256 abc "$U/files/hello.txt" cache 2>err &&
	grep "bad sha256" err &&
	expect_fail 1 skiff __fetch $CA "https://user@localhost/x" cache 2>err &&
	grep "user info" err &&
	expect_fail 2 skiff __fetch "$U/files/hello.txt" 2>err &&
	expect_fail 2 skiff __fetch --max-bytes x "$U/files/hello.txt" cache 2>err
'

test_done
