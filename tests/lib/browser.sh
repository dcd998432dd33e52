# A real browser for the dashboard's tests (t0830): Debian's chromium, driven by
# playwright-core from npm (executablePath /usr/bin/chromium; nothing is downloaded but
# the npm package, kept in a cache across runs).
#
#   browser_setup          installs chromium and node (tests/packages.list) and
#                          playwright-core; 0, or 1 with the reason in $browser_why
#   browser_run FILE.mjs ARGS...
#                          runs a node script that imports playwright-core (its
#                          chromium is $BROWSER_CHROMIUM)

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

browser_run() {
	NODE_PATH="$BROWSER_CACHE/node_modules" node "$@"
}
