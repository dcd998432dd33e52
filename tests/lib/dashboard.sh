# shellcheck shell=sh
# `skiff dashboard` in a test (t0830, t0831), sourced after tests/t/lib.sh and
# tests/lib/browser.sh:
#
#   dash_start           starts it on a free port in $TRASH (dash.out, dash.err; its pid
#                        in dash.pid, its exit status in dash.rc once it ends) and sets
#                        DASH_PID, URL (with the token), BASE, TOKEN, HOSTPORT; skips
#                        every test when it does not start
#   get FILE PATH        GET with the cookie: the body into FILE, the status printed
#   post FILE PATH       POST with the cookie and our Origin, the same
#   dash_ends            the last test: SIGTERM ends it with exit 0, no bug report
#   pw STEP ARGS...      one step of tests/lib/dashboard_browser.cjs in Chromium (the
#                        script's browser server runs it, once browser_server_start ran)
#   pw_background ...    pw in the background: live.out, live.err, its status in live.rc

dash_start() {
	(cd "$TRASH" && { "$SKIFF_BIN" dashboard --port 0 --no-open >dash.out 2>dash.err &
		echo $! >dash.pid; wait $!; echo $? >dash.rc; }) &
	wait_for "grep -qs '^skiff dashboard: http' '$TRASH/dash.out'" 10 || {
		cat "$TRASH/dash.err" >&2
		test_skip_all "the dashboard did not start"
	}
	DASH_PID=$(cat "$TRASH/dash.pid")
	URL=$(sed -n 's/^skiff dashboard: //p' "$TRASH/dash.out")
	BASE=${URL%%/?token=*}
	TOKEN=${URL##*token=}
	HOSTPORT=${BASE#http://}
}

get() {
	curl -s -o "$1" -w "%{http_code}" -H "Cookie: skiff_dashboard=$TOKEN" "$BASE$2"
}

post() {
	curl -s -o "$1" -w "%{http_code}" -X POST -H "Cookie: skiff_dashboard=$TOKEN" \
		-H "Origin: http://$HOSTPORT" "$BASE$2"
}

dash_ends() {
	test_expect_success 'SIGTERM ends the dashboard (exit 0); its stderr holds no bug report' '
		kill -TERM "$DASH_PID" &&
		wait_for "test -s dash.rc" 20 &&
		test "$(cat dash.rc)" = 0 &&
		! grep -E "AddressSanitizer|LeakSanitizer|runtime error|BUG:" dash.err
	'
}

pw() {
	if [ -n "${BROWSER_STEPS:-}" ]; then
		python3 "$SRC_DIR/tests/lib/browser_step.py" "$BROWSER_STEPS" "$URL" "$@"
	else
		browser_run "$SRC_DIR/tests/lib/dashboard_browser.cjs" "$URL" "$@"
	fi
}

pw_background() {
	# live.rc appears whole (renamed into place): a waiter that sees it can read it.
	rm -f live.rc || return
	(pw "$@" >live.out 2>live.err; echo $? >live.rc.tmp && mv live.rc.tmp live.rc) &
}
