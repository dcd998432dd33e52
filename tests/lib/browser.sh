# A real browser for the dashboard's tests (t0830): Debian's chromium, driven by
# playwright-core from npm (executablePath /usr/bin/chromium; nothing is downloaded but
# the npm package, kept in a cache across runs).
#
#   browser_setup          installs chromium and node (tests/packages.list) and
#                          playwright-core; 0, or 1 with the reason in $browser_why
#   browser_run FILE.mjs ARGS...
#                          runs a node script that imports playwright-core (its
#                          chromium is $BROWSER_CHROMIUM)
#   browser_server_start, browser_server_stop
#                          one Chromium for a whole test script, which runs its
#                          steps (below)

BROWSER_PW_VERSION=1.57.0
BROWSER_CACHE=${SKIFF_TEST_CACHE:-/var/cache/skiff-test}/npm/playwright-core-$BROWSER_PW_VERSION
BROWSER_CHROMIUM=/usr/bin/chromium

browser_setup() {
	browser_why=
	# shellcheck source=tests/lib/packages.sh
	. "$SRC_DIR/tests/lib/packages.sh"
	pkg_install chromium >/dev/null 2>&1 || { browser_why="cannot install chromium"; return 1; }
	# node and npm: Debian's (a machine with another build of node has its npm).
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		pkg_install nodejs npm >/dev/null 2>&1 ||
			{ browser_why="cannot install nodejs and npm"; return 1; }
	fi
	if [ ! -f "$BROWSER_CACHE/node_modules/playwright-core/package.json" ]; then
		# A package.json of its own: npm installs here, not in a project above.
		mkdir -p "$BROWSER_CACHE" &&
			(cd "$BROWSER_CACHE" && { [ -f package.json ] || echo "{}" >package.json; } &&
				flock -w 300 . npm install --prefix . --no-audit --no-fund --no-update-notifier \
					--loglevel=error "playwright-core@$BROWSER_PW_VERSION" >npm.log 2>&1) ||
			{ browser_why="npm install playwright-core@$BROWSER_PW_VERSION failed (see $BROWSER_CACHE/npm.log)"; return 1; }
	fi
	export NODE_PATH="$BROWSER_CACHE/node_modules" BROWSER_CHROMIUM
	return 0
}

# browser_server_start (a test script, after browser_setup: it needs tests/t/lib.sh): one
# Chromium for the whole script (tests/lib/browser_server.cjs), which runs the script's
# steps of dashboard_browser.cjs, sent by tests/lib/browser_step.py to the socket in
# $BROWSER_STEPS: a step that started a node and a Chromium of its own was most of the
# dashboard scripts' CPU. It ends with the script. Where it cannot start, BROWSER_STEPS
# stays unset and each step starts its own, as it says.
browser_server_start() {
	unset BROWSER_STEPS
	rm -f "$TRASH/browser.sock"
	NODE_PATH="$BROWSER_CACHE/node_modules" node "$SRC_DIR/tests/lib/browser_server.cjs" \
		"$TRASH/browser.sock" "$$" >"$TRASH/browser-server.log" 2>&1 &
	BROWSER_SERVER_PID=$!
	# The socket is there once the browser runs and the server listens.
	if ! wait_for "test -S \"$TRASH/browser.sock\" || ! kill -0 $BROWSER_SERVER_PID 2>/dev/null" 60 ||
		! test -S "$TRASH/browser.sock"; then
		echo "# browser: no shared Chromium ($(tail -n 3 "$TRASH/browser-server.log" 2>/dev/null)):" \
			"each step starts its own"
		browser_server_stop
		return 0
	fi
	BROWSER_STEPS=$TRASH/browser.sock
	export BROWSER_STEPS
}

# browser_server_stop: ends that Chromium now (a test_cleanup_hook's first step).
browser_server_stop() {
	[ -n "${BROWSER_SERVER_PID:-}" ] || return 0
	kill -TERM "$BROWSER_SERVER_PID" 2>/dev/null && wait "$BROWSER_SERVER_PID" 2>/dev/null
	BROWSER_SERVER_PID=
	return 0
}

browser_run() {
	NODE_PATH="$BROWSER_CACHE/node_modules" node "$@"
}
