#!/bin/sh
# Runtime env benchmarks: prints figures, asserts nothing (not part of `make test`).
#
#   tests/bench/renv_bench.sh [--skiff build/skiff] [--runs 20] [--cold-runs 3] [--mb 16]
#                           [--rate 8]
#
#   hit    job start-to-end time of a trivial job (`echo`) without runtime_env, and of the
#          same job with a runtime_env whose venv is already built (a cache hit: the
#          shim's fast path), alternating run by run; the difference is what a cached
#          runtime_env adds to a job's start (goal: under 20 ms).
#   cold   a cold runtime_env: a venv build (real `python3 -m venv` + pip of a local
#          wheel) and a working_dir zip of MB MiB fetched over HTTPS from a loopback
#          server sending RATE MiB/s (the test CA of tests/lib/https.sh) and unpacked, with
#          the two in parallel (the default) and one after the other (renv.conf
#          `parallel = 0`), alternating, each in a fresh SKIFF_HOME.
#
# Everything runs on this machine in a temp dir that is removed at the end.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SKIFF=$root/build/skiff
RUNS=20
COLD=3
MB=16
RATE=8
while [ $# -gt 0 ]; do
	case $1 in
	--skiff) SKIFF=$(realpath "$2"); shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--cold-runs) COLD=$2; shift 2 ;;
	--mb) MB=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	*) echo "usage: $0 [--skiff PATH] [--runs N] [--cold-runs N] [--mb MIB] [--rate MIBPS]" >&2
		exit 2 ;;
	esac
done
[ -x "$SKIFF" ] || { echo "renv_bench: $SKIFF is not built" >&2; exit 1; }

# shellcheck disable=SC2034 # read by tests/lib/https.sh
SRC_DIR=$root
TRASH=$(mktemp -d /tmp/skiff-renv-bench.XXXXXX)
test_skip_all() { echo "renv_bench: $1" >&2; exit 1; }
# shellcheck source=tests/lib/renv.sh
. "$root/tests/lib/renv.sh"
# shellcheck source=tests/lib/https.sh
. "$root/tests/lib/https.sh"
https_need_tools || { echo "renv_bench: needs openssl and python3" >&2; exit 1; }
export HOME=$TRASH/uhome
mkdir -p "$HOME"
skiff() { "$SKIFF" "$@"; }

SERVER=
cleanup() {
	[ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null
	for h in "$TRASH"/home*; do
		[ -d "$h" ] && SKIFF_HOME=$h "$SKIFF" node down >/dev/null 2>&1
	done
	rm -rf "$TRASH"
}
trap cleanup EXIT INT TERM

cd "$TRASH" || exit 1
mkwheel skiffa 1.0 wh
conf() { # conf HOME PARALLEL
	mkdir -p "$1"
	printf 'no_index = 1\nfind_links = %s/wh\nca_file = %s/pki/ca.pem\nparallel = %s\n' \
		"$TRASH" "$TRASH" "$2" >"$1/renv.conf"
}

# job_ms ID: ended_at - submitted_at in ms, from the node queue.
job_ms() {
	skiff node queue --json | $PY -c "
import json, sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print('%.1f' % ((j['ended_at'] - j['submitted_at']) * 1000))"
}

median() {
	sort -n | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'
}

# --- hit ---------------------------------------------------------------------------
export SKIFF_HOME=$TRASH/home-hit
conf "$SKIFF_HOME" 1
printf 'run: echo plain\n' >plain.yaml
printf 'runtime_env:\n  pip: [skiffa]\nrun: echo renv\n' >renv.yaml
id=$(skiff node submit renv.yaml) && skiff node logs "$id" >/dev/null || {
	echo "renv_bench: the warm-up build failed" >&2
	cat "$SKIFF_HOME/logs/$id/setup.log" >&2
	exit 1
}
: >plain.ms
: >renv.ms
i=0
while [ $i -lt "$RUNS" ]; do
	a=$(skiff node submit plain.yaml) && skiff node logs "$a" >/dev/null && job_ms "$a" >>plain.ms
	b=$(skiff node submit renv.yaml) && skiff node logs "$b" >/dev/null && job_ms "$b" >>renv.ms
	i=$((i + 1))
done
p=$(median <plain.ms)
r=$(median <renv.ms)
echo "hit: job submit-to-end, median of $RUNS: without runtime_env ${p} ms," \
	"with a cached runtime_env ${r} ms, added $(echo "$r $p" | awk '{printf "%.1f", $1 - $2}') ms"
skiff node down >/dev/null

# --- cold --------------------------------------------------------------------------
# A server that sends at RATE MiB/s, like a real network (loopback TLS itself is CPU-bound
# and would measure only this machine's cores).
mkdir -p www src/proj
head -c $((MB * 1024 * 1024)) /dev/urandom >src/proj/blob.bin
echo 'print("main")' >src/proj/main.py
(cd src && $PY -m zipfile -c "$TRASH/www/proj.zip" proj)
https_make_certs "$TRASH/pki" || exit 1
$PY - "$TRASH/pki" "$TRASH/www" "$RATE" >port 2>server.log <<-\EOF &
	import http.server, ssl, sys, time, os
	pki, root, rate = sys.argv[1], sys.argv[2], float(sys.argv[3]) * 1048576
	class H(http.server.BaseHTTPRequestHandler):
	    def do_GET(self):
	        data = open(os.path.join(root, "proj.zip"), "rb").read()
	        self.send_response(200)
	        self.send_header("Content-Length", str(len(data)))
	        self.end_headers()
	        t0 = time.time()
	        for i in range(0, len(data), 65536):
	            self.wfile.write(data[i:i + 65536])
	            ahead = t0 + (i + 65536) / rate - time.time()
	            if ahead > 0:
	                time.sleep(ahead)
	    def log_message(self, *a):
	        pass
	srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
	ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
	ctx.load_cert_chain(pki + "/srv.pem", pki + "/srv.key")
	srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
	print(srv.server_address[1], flush=True)
	srv.serve_forever()
	EOF
SERVER=$!
wait_port() {
	n=0
	while [ ! -s port ] && [ $n -lt 250 ]; do sleep 0.02; n=$((n + 1)); done
}
wait_port
U=https://localhost:$(cat port)/proj.zip
cold_run() { # cold_run PARALLEL N -> seconds
	export SKIFF_HOME=$TRASH/home-cold-$1-$2
	conf "$SKIFF_HOME" "$1"
	printf 'runtime_env:\n  pip: [skiffa]\n  working_dir: %s\nrun: python main.py\n' \
		"$U?$1-$2" >cold.yaml
	t0=$(date +%s.%N)
	id=$(skiff node submit cold.yaml) && skiff node logs "$id" >/dev/null ||
		{ echo "renv_bench: cold job failed" >&2; cat "$SKIFF_HOME/logs/$id/setup.log" >&2; }
	t1=$(date +%s.%N)
	skiff node down >/dev/null
	rm -rf "$SKIFF_HOME"
	echo "$t1 $t0" | awk '{printf "%.2f\n", $1 - $2}'
}
: >par.s
: >ser.s
i=0
while [ $i -lt "$COLD" ]; do
	cold_run 1 $i >>par.s
	cold_run 0 $i >>ser.s
	i=$((i + 1))
done
kill "$SERVER" 2>/dev/null
ps=$(median <par.s)
ss=$(median <ser.s)
echo "cold: venv build + ${MB} MiB working_dir over https at ${RATE} MiB/s, median of $COLD:" \
	"parallel ${ps} s, one after the other ${ss} s, ratio $(echo "$ps $ss" | awk '{printf "%.2f", $1 / $2}')"
