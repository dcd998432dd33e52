// One Chromium for all the steps of a test script (tests/lib/browser.sh,
// browser_server_start): a step connects to it and works in a context of its own (its own
// cookies, storage and cache), where it used to start a Chromium of its own, most of a
// step's CPU on the suite's two cores.
//
//   node browser_server.cjs WS_FILE OWNER_PID
//
// Writes the endpoint to WS_FILE (whole: renamed into place) once the browser runs, and
// ends, browser and all, on SIGTERM or when OWNER_PID (the test script) is gone.
"use strict";
const fs = require("fs");
const {chromium} = require("playwright-core");

const [wsFile, owner] = process.argv.slice(2);
// How often it looks whether the test script is still there.
const OWNER_CHECK_MS = 1000;

(async () => {
  const server = await chromium.launchServer({
    executablePath: process.env.BROWSER_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
  let ending = false;
  const end = async () => {
    if (ending) return;
    ending = true;
    await server.close().catch(() => {});
    process.exit(0);
  };
  process.on("SIGTERM", end);
  process.on("SIGINT", end);
  setInterval(() => {
    try {
      process.kill(Number(owner), 0);
    } catch (e) {
      end();
    }
  }, OWNER_CHECK_MS);
  fs.writeFileSync(wsFile + ".tmp", server.wsEndpoint() + "\n");
  fs.renameSync(wsFile + ".tmp", wsFile);
})().catch(e => {
  process.stderr.write("browser_server: " + e.message + "\n");
  process.exit(1);
});
