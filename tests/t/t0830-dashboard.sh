#!/bin/sh
# `skiff dashboard` (docs/dashboard.md): its API against the CLI's own --json, its
# guards against a hostile browser (token, Host, Origin, methods, sizes), live changes,
# and the pages in a real Chromium driven by playwright-core (tests/lib/browser.sh):
# rows, live updates without a reload, logs streaming with their colours, confirmed
# actions, and names that are markup shown as text.
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib/browser.sh
. "$SRC_DIR/tests/lib/browser.sh"
# shellcheck source=tests/lib/dashboard.sh
. "$SRC_DIR/tests/lib/dashboard.sh"

test_cleanup_hook() {
	browser_server_stop
	[ -z "${DASH_PID:-}" ] || kill "$DASH_PID" 2>/dev/null
	for c in $(skiff status --json 2>/dev/null | python3 -c "import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		skiff down "$c" >/dev/null 2>&1
	done
	pkill -KILL -f "$TRASH" 2>/dev/null
}

# A job whose name is markup, and a log with colours and a closing script tag.
XSS=$(printf '<img src=x onerror=alert(1)></script>\042q')
cat >"$TRASH/xss.yaml" <<-\EOF
name: "<img src=x onerror=alert(1)></script>\"q"
run: printf '\033[31mred-line\033[0m </script><b>bold</b>\n'
EOF

# The dashboard, on a free port (tests/lib/dashboard.sh).
dash_start

same_json() {
	python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a != b)" "$1" "$2"
}

test_expect_success 'the URL holds a fresh 128-bit token; the page swaps it for an HttpOnly SameSite=Strict cookie' '
	echo "$TOKEN" | grep -qx "[0-9a-f]\{32\}" &&
	curl -s -D - -o /dev/null "$URL" | tr -d "\r" >h &&
	grep -q "^HTTP/1.1 302" h &&
	grep -qix "set-cookie: skiff_dashboard=$TOKEN; HttpOnly; SameSite=Strict; Path=/" h &&
	grep -qix "location: /" h &&
	curl -s -D - -o /dev/null "$BASE/clusters/web1?x=1&token=$TOKEN" | tr -d "\r" >h2 &&
	grep -qix "location: /clusters/web1?x=1" h2
'

test_expect_success 'no token, a wrong one, or a token in the query of an API call: 401' '
	test "$(curl -s -o b -w "%{http_code}" "$BASE/api/v1/clusters")" = 401 &&
	grep -q "token" b &&
	test "$(curl -s -o /dev/null -w "%{http_code}" "$BASE/")" = 401 &&
	test "$(curl -s -o /dev/null -w "%{http_code}" -H "Cookie: skiff_dashboard=0$TOKEN" "$BASE/api/v1/clusters")" = 401 &&
	test "$(curl -s -o /dev/null -w "%{http_code}" -H "Cookie: skiff_dashboard=" "$BASE/api/v1/clusters")" = 401 &&
	test "$(curl -s -o /dev/null -w "%{http_code}" "$BASE/api/v1/clusters?token=$TOKEN")" = 401 &&
	test "$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/clusters")" = 200
'

test_expect_success 'a foreign Host (DNS rebinding): 421; a mutation without our Origin, or a GET of one: 403, 405' '
	test "$(curl -s -o /dev/null -w "%{http_code}" -H "Host: evil.example:${HOSTPORT#*:}" -H "Cookie: skiff_dashboard=$TOKEN" "$BASE/api/v1/clusters")" = 421 &&
	test "$(curl -s -o /dev/null -w "%{http_code}" -H "Host: localhost:${HOSTPORT#*:}" -H "Cookie: skiff_dashboard=$TOKEN" "$BASE/api/v1/clusters")" = 200 &&
	test "$(curl -s -o b -w "%{http_code}" -X POST -H "Cookie: skiff_dashboard=$TOKEN" "$BASE/api/v1/clusters/web1/down")" = 403 &&
	test "$(curl -s -o /dev/null -w "%{http_code}" -X POST -H "Cookie: skiff_dashboard=$TOKEN" -H "Origin: http://evil.example" "$BASE/api/v1/clusters/web1/down")" = 403 &&
	test "$(curl -s -o /dev/null -w "%{http_code}" -X POST -H "Cookie: skiff_dashboard=$TOKEN" -H "Origin: http://$HOSTPORT.evil.example" "$BASE/api/v1/clusters/web1/down")" = 403 &&
	test "$(get b /api/v1/clusters/web1/down)" = 405 &&
	test "$(get b /api/v1/nope)" = 404 &&
	test "$(get b "/api/v1/clusters/-rf/jobs")" = 404 &&
	test "$(get b "/api/v1/clusters/web1/jobs/1%2f..%2f/logs")" = 404 &&
	test "$(get b "/clusters/a%00b")" = 400
'

# A head past the limit; 20 connections that send half a request and wait.
cat >"$TRASH/bighead.py" <<-\EOF
import socket, sys
host, port = sys.argv[1].split(":")
s = socket.create_connection((host, int(port)))
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n")
r = s.recv(100)
assert r.startswith(b"HTTP/1.1 431"), r
EOF
cat >"$TRASH/slow.py" <<-\EOF
import socket, sys, urllib.request
host, port = sys.argv[1].split(":")
slow = [socket.create_connection((host, int(port))) for _ in range(20)]
for s in slow:
    s.sendall(b"GET /api/v1/clusters HTTP/1.1\r\nHost: ")
req = urllib.request.Request("http://%s/api/v1/jobs" % sys.argv[1],
                             headers={"Cookie": "skiff_dashboard=" + sys.argv[2]})
assert urllib.request.urlopen(req, timeout=20).status == 200
EOF

test_expect_success 'bounded: a huge head is refused (431); a browser that sends half a request holds up nobody' '
	python3 bighead.py "$HOSTPORT" &&
	python3 slow.py "$HOSTPORT" "$TOKEN"
'

test_expect_success 'the API gives what the CLI gives: clusters, a cluster, its jobs, managed jobs' '
	skiff launch -c web1 xss.yaml >launch.out 2>&1 &&
	skiff launch -c web2 -d "sleep 300" >/dev/null 2>&1 &&
	test "$(get api.json /api/v1/clusters)" = 200 &&
	skiff status --json >cli.json && same_json cli.json api.json &&
	test "$(get api.json /api/v1/clusters/web1)" = 200 &&
	skiff status --json web1 >cli.json && same_json cli.json api.json &&
	test "$(get api.json /api/v1/clusters/web1/jobs)" = 200 &&
	skiff queue --json web1 >cli.json && same_json cli.json api.json &&
	python3 -c "import json,sys; j=json.load(open(\"api.json\"))[0]; assert j[\"name\"] == sys.argv[1], j" "$XSS" &&
	test "$(get api.json /api/v1/jobs)" = 200 &&
	skiff jobs queue --json >cli.json && same_json cli.json api.json &&
	test "$(get b /api/v1/clusters/nosuch/jobs)" != 200 &&
	grep -q "nosuch" b
'

test_expect_success 'the config page'"'"'s API is `skiff config --json`: each key and where it was written' '
	printf "kubernetes:\n  provision_timeout: 60\n" >"$SKIFF_HOME/config.yaml" &&
	test "$(get api.json /api/v1/config)" = 200 &&
	skiff config --json >cli.json && same_json cli.json api.json &&
	grep -q "provision_timeout" api.json
'

test_expect_success 'a managed job: its task log, and the controller'"'"'s (its transitions and why)' '
	skiff jobs launch -n mj "echo managed-out" >/dev/null 2>&1 &&
	MJ=$(skiff jobs queue --json | python3 -c "import json,sys; print([j[\"id\"] for j in json.load(sys.stdin) if j[\"name\"] == \"mj\"][0])") &&
	test "$(get ml.txt "/api/v1/jobs/$MJ/logs?follow=0")" = 200 &&
	grep -q "managed-out" ml.txt &&
	test "$(get cl.txt "/api/v1/jobs/$MJ/logs?controller=1")" = 200 &&
	grep -q "transitions of managed job $MJ" cl.txt &&
	grep -q "SUCCEEDED *DONE" cl.txt
'

test_expect_success 'a job log streams as text, ANSI and markup as they are' '
	test "$(get log.txt "/api/v1/clusters/web1/jobs/1/logs?follow=0")" = 200 &&
	grep -q "red-line" log.txt && grep -q "</script><b>bold</b>" log.txt &&
	curl -s -D h -o /dev/null -H "Cookie: skiff_dashboard=$TOKEN" "$BASE/api/v1/clusters/web1/jobs/1/logs?follow=0" &&
	grep -qi "^content-type: text/plain" h && grep -qi "^x-content-type-options: nosniff" h &&
	grep -qi "^content-security-policy: default-src .self." h
'

test_expect_success 'a change of state is pushed as an event (no page asks the nodes)' '
	(curl -s -N -H "Cookie: skiff_dashboard=$TOKEN" "$BASE/api/v1/events" >events &) &&
	wait_for "grep -q \"^event: change\" events" 10 &&
	n=$(grep -c "^event: change" events) &&
	skiff exec web1 -d "true" >/dev/null 2>&1 &&
	wait_for "test \$(grep -c \"^event: change\" events) -gt $n" 10 &&
	{ pkill -f "curl -s -N -H Cookie: skiff_dashboard=$TOKEN" || :; }
'

test_expect_success 'actions run as the CLI: cancel a job; down refuses a cluster that is not there' '
	J=$(skiff queue --json web2 | python3 -c "import json,sys; print(json.load(sys.stdin)[-1][\"id\"])") &&
	test "$(post a.json "/api/v1/clusters/web2/jobs/$J/cancel")" = 200 &&
	python3 -c "import json; d=json.load(open(\"a.json\")); assert d[\"ok\"] is True, d" &&
	wait_for "skiff queue --json web2 | grep -q CANCELLED" 20 &&
	test "$(post a.json /api/v1/clusters/nosuch/down)" != 200 &&
	python3 -c "import json; d=json.load(open(\"a.json\")); assert \"nosuch\" in d[\"error\"] and d[\"exit_code\"], d"
'

# another_dashboard NAME ARGS...: a dashboard in the background; NAME.out, .err, .pid.
another_dashboard() {
	_n=$1
	shift
	"$SKIFF_BIN" dashboard "$@" >"$_n.out" 2>"$_n.err" &
	echo $! >"$_n.pid"
}

test_expect_success 'over TLS (--tls; any non-loopback host): a self-signed certificate made once, 0600; a Secure cookie; an https Origin' '
	another_dashboard tls --tls --port 0 --no-open &&
	wait_for "grep -qs \"^skiff dashboard: https://\" tls.out" 10 &&
	TURL=$(sed -n "s/^skiff dashboard: //p" tls.out) && TB=${TURL%%/?token=*} && TT=${TURL##*token=} &&
	grep -q "self-signed certificate was made" tls.err &&
	test "$(stat -c %a "$SKIFF_HOME/dashboard/key-127.0.0.1.pem")" = 600 &&
	openssl x509 -in "$SKIFF_HOME/dashboard/cert-127.0.0.1.pem" -noout -subject | grep -q "CN *= *127.0.0.1" &&
	curl -sk -D - -o /dev/null "$TURL" | tr -d "\r" >th &&
	grep -qix "set-cookie: skiff_dashboard=$TT; HttpOnly; SameSite=Strict; Path=/; Secure" th &&
	test "$(curl -sk -o tj -w "%{http_code}" -H "Cookie: skiff_dashboard=$TT" "$TB/api/v1/jobs")" = 200 &&
	test "$(curl -sk -o /dev/null -w "%{http_code}" -X POST -H "Cookie: skiff_dashboard=$TT" -H "Origin: http://${TB#https://}" "$TB/api/v1/jobs/1/cancel")" = 403 &&
	! curl -s -o /dev/null "http://${TB#https://}/api/v1/jobs" &&
	kill "$(cat tls.pid)" &&
	another_dashboard tls2 --tls --port 0 --no-open &&
	wait_for "grep -qs \"^skiff dashboard: https://\" tls2.out" 10 &&
	! grep -q "self-signed certificate was made" tls2.err &&
	kill "$(cat tls2.pid)" &&
	expect_fail 2 "$SKIFF_BIN" dashboard --tls --insecure-http 2>e &&
	expect_fail 2 "$SKIFF_BIN" dashboard --cert c.pem 2>e && grep -q "together" e
'

test_expect_success 'the token is in no file of skiff home, the user home or the logs' '
	! grep -rqs "$TOKEN" "$SKIFF_HOME" "$HOME" &&
	! grep -qs "$TOKEN" dash.err
'

if ! browser_setup; then
	test_skip 'pages in Chromium' "$browser_why"
	dash_ends
	test_done
fi
browser_server_start

test_expect_success 'Chromium: the clusters page lists the clusters with their status' '
	pw row /clusters "tr[data-cluster=web1]" UP >out &&
	pw row /clusters "tr[data-cluster=web2]" UP >out
'

test_expect_success 'Chromium: the clusters page filters by name, status and infra' '
	pw filter web1 "" "" >out && grep -qx "shown: web1" out &&
	pw filter web UP local >out && grep -qx "shown: web1 web2" out &&
	pw filter "" STOPPED "" >out && grep -qx "shown: " out &&
	pw filter "" "" ssh >out && grep -qx "shown: " out
'

test_expect_success 'Chromium: markup in a job name is text: no element made, no dialog' '
	pw text /clusters/web1 "tr[data-job=\"1\"] td.name" >name &&
	printf "%s\n" "$XSS" >want && test_cmp want name &&
	pw noscript /clusters/web1 >inj && grep -qx "injected elements: 0" inj
'

test_expect_success 'Chromium: the config page shows a key, its value and its file and line' '
	pw row /config "tr[data-key=\"kubernetes.provision_timeout\"]" "config.yaml:2:22" >out
'

test_expect_success 'Chromium: a redraw changes the page in place: the button under the pointer stays, its click is not lost' '
	pw kept web1 1 >out &&
	grep -qx "the same button after the redraw: true" out &&
	grep -qx "its log opened" out
'

test_expect_success 'Chromium: 10 tabs open at once all load (one events stream for the browser, not one per tab)' '
	pw tabs 10 /clusters "tr[data-cluster=web1]" >out &&
	grep -qx "10 tabs drawn" out
'

test_expect_success 'Chromium: a hidden tab lets go of its followed log: 8 tabs follow one by one, the first resumes' '
	skiff exec web2 -d "echo tab-line; sleep 300" >/dev/null 2>&1 &&
	TJ=$(skiff queue --json web2 | python3 -c "import json,sys; print(json.load(sys.stdin)[-1][\"id\"])") &&
	pw log-tabs 8 web2 "$TJ" tab-line >out &&
	grep -qx "8 tabs followed the log" out &&
	# Each tab let go of its stream: the followers on the node (9 of them) went too.
	wait_for "! pgrep -f \"^$TRASH/.*node logs --follow --tail 2000 $TJ\\\$\" >/dev/null" 20 &&
	skiff cancel -y web2 "$TJ" >/dev/null 2>&1
'

test_expect_success 'Chromium: the managed jobs page says where the controller runs; a job'"'"'s page streams its log' '
	pw row /jobs "p" "The controller runs on this machine" >out &&
	MJ=$(skiff jobs queue --json | python3 -c "import json,sys; print([j[\"id\"] for j in json.load(sys.stdin) if j[\"name\"] == \"mj\"][0])") &&
	pw row "/jobs/$MJ" "pre#log" "managed-out" >out
'

test_expect_success 'Chromium: the infra page lists each ssh pool host and who books it' '
	printf "lab:\n  hosts:\n    - ip: 10.9.9.1\n    - ip: 10.9.9.2\n      user: bob\n      port: 2222\n" >"$SKIFF_HOME/ssh_node_pools.yaml" &&
	skiff check --json ssh >ck.json &&
	python3 -c "import json; t=json.load(open(\"ck.json\"))[0][\"inventory\"][0]; assert t[\"of\"] == \"hosts\" and [(r[\"pool\"], r[\"user\"], r[\"cluster\"]) for r in t[\"rows\"]] == [(\"lab\", \"\", None), (\"lab\", \"bob\", None)], t" &&
	pw text /infra "tr[data-row=\"ssh/lab/10.9.9.2\"]" >out && cat out &&
	grep -q "^lab10.9.9.22222bobfree$" out &&
	rm -f "$SKIFF_HOME/ssh_node_pools.yaml"
'

test_expect_success 'Chromium: a cluster page asks its nodes: each supervisor, or why it does not answer' '
	skiff launch -c sv --num-nodes 2 -d true >/dev/null 2>&1 &&
	pw row /clusters/sv "tr[data-rank=\"1\"] td.supervisor" "pid " >out &&
	rm -f "$SKIFF_HOME"/local/sv/1/.skiff/bin/skiff-* &&
	pw row /clusters/sv "tr[data-rank=\"1\"] td.supervisor" "NO ANSWER its skiff is gone" >out &&
	pw row /clusters/sv "tr[data-rank=\"0\"] td.supervisor" "UP pid " >out &&
	skiff down --purge sv >/dev/null 2>&1
'

test_expect_success 'Chromium: a job started from the CLI shows, and ends, without a reload' '
	rm -f ready &&
	pw_background wait-text /clusters/web1 "tr[data-job=\"3\"]" SUCCEEDED "$TRASH/ready" &&
	wait_for "test -f ready" 30 &&
	skiff exec web1 "echo third" >/dev/null &&
	wait_for "test -f live.rc" 60 &&
	cat live.out live.err && test "$(cat live.rc)" = 0 &&
	grep -q "^shown after" live.out
'

test_expect_success 'Chromium: a detached job that ends on its node shows it, told by the node (no reload)' '
	rm -f ready &&
	pw_background wait-text /clusters/web1 "tr[data-job=\"4\"]" SUCCEEDED "$TRASH/ready" &&
	wait_for "test -f ready" 30 &&
	skiff exec -d web1 "sleep 3" >/dev/null 2>&1 &&
	wait_for "test -f live.rc" 60 &&
	cat live.out live.err && test "$(cat live.rc)" = 0
'

test_expect_success 'Chromium: logs stream with colours drawn and markup as text' '
	pw logs web1 1 red-line >log.html &&
	grep -q "<span class=\"c31\">red-line</span>" log.html &&
	grep -q "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" log.html
'

test_expect_success 'Chromium: cancel needs the confirmation; once given, the job is CANCELLED' '
	skiff exec web2 -d "sleep 301" >/dev/null 2>&1 &&
	J=$(skiff queue --json web2 | python3 -c "import json,sys; print(json.load(sys.stdin)[-1][\"id\"])") &&
	pw click /clusters/web2 "tr[data-job=\"$J\"] button.danger" dismiss "tr[data-job=\"$J\"]" RUNNING >c1 &&
	skiff queue --json web2 | python3 -c "import json,sys; j=[j for j in json.load(sys.stdin) if j[\"id\"] == $J][0]; assert j[\"status\"] == \"RUNNING\", j" &&
	pw click /clusters/web2 "tr[data-job=\"$J\"] button.danger" accept "#note" done >c2 &&
	grep -q "confirm: Cancel job $J on web2?" c2 &&
	wait_for "skiff queue --json web2 | python3 -c \"import json,sys; sys.exit(not [j for j in json.load(sys.stdin) if j[\\\"id\\\"] == $J and j[\\\"status\\\"] == \\\"CANCELLED\\\"])\"" 20
'

test_expect_success 'Chromium: stop and start from the page, each confirmed; a managed job cancelled from its row' '
	skiff launch -c web3 -d true >/dev/null 2>&1 &&
	pw click /clusters/web3 "button:text-is(\"Stop\")" accept "#note" done >s1 &&
	grep -q "confirm: Stop cluster web3?" s1 &&
	wait_for "skiff status --json web3 | grep -q STOPPED" 30 &&
	pw click /clusters/web3 "button:text-is(\"Start\")" accept "#note" done >s2 &&
	grep -q "confirm: Start cluster web3?" s2 &&
	wait_for "skiff status --json web3 | grep -q \"\\\"UP\\\"\"" 60 &&
	skiff down web3 >/dev/null 2>&1 &&
	skiff jobs launch -d -n mjc "sleep 300" >/dev/null 2>&1 &&
	MC=$(skiff jobs queue --json | python3 -c "import json,sys; print([j[\"id\"] for j in json.load(sys.stdin) if j[\"name\"] == \"mjc\"][0])") &&
	pw click /jobs "tr[data-job=\"$MC\"] button.danger" accept "#note" done >c &&
	grep -q "confirm: Cancel managed job $MC?" c &&
	wait_for "skiff jobs queue --json | grep -q CANCELLED" 60
'

# On a failure, what of skiff still ran (the down's own processes, a lock's holder).
skiff_procs() {
	ps -eo pid,etimes,args | grep "[s]kiff" | grep -v "sleep 3" | cut -c1-200
}

test_expect_success 'Chromium: down from the page takes the cluster away' '
	{ pw click /clusters/web2 "button.danger" accept "#note" done >d ||
		{ cat d; skiff_procs; ls -la "$SKIFF_HOME/locks" 2>&1; false; }; } &&
	grep -q "confirm: Tear down cluster web2?" d &&
	wait_for "skiff status --json >st.json && ! grep -q \"\\\"web2\\\"\" st.json" 30
'

dash_ends
test_done
