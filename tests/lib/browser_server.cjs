// One Chromium for all the steps of a test script (tests/lib/browser.sh,
// browser_server_start), and the steps themselves run here: a step started a node and
// loaded playwright (0.6 CPU-s on the suite's VM), then opened a new context and page
// (a renderer process, 0.8 CPU-s more), where its own work was half a CPU-second.
//
//   node browser_server.cjs SOCKET OWNER_PID
//
// Listens at SOCKET, once the browser runs, for steps (tests/lib/browser_step.py sends
// them: one JSON line {"url", "step", "args"}; the answer is one JSON object {"code",
// "out", "err"}), each run by dashboard_browser.cjs's runStep() on a page kept from step
// to step in one context (the dashboard keeps nothing in the browser but its cookie,
// which each step sets again): a page that a step failed on is closed and the next step
// gets a new one. Steps run at once when they come at once (a step waiting in the
// background), each on a page of its own. Ends, browser and all, on SIGTERM or when
// OWNER_PID (the test script) is gone.
"use strict";
const fs = require("fs");
const net = require("net");
const path = require("path");
const {runStep, launchBrowser, baseOf, failure, VIEWPORT} =
  require(path.join(__dirname, "dashboard_browser.cjs"));

const [sockPath, owner] = process.argv.slice(2);
// How often it looks whether the test script is still there.
const OWNER_CHECK_MS = 1000;
// A request is one line; a longer one is not ours.
const MAX_REQUEST = 64 << 10;

(async () => {
  const browser = await launchBrowser();
  const context = await browser.newContext({viewport: VIEWPORT});
  const idle = []; // pages no step uses now, each at a page of no script (below)

  const step = async req => {
    const page = idle.pop() || await context.newPage();
    let out = "", err = "", code = 0;
    try {
      await runStep(page, req.url, req.step, req.args || [], t => { out += t; });
      // Off the dashboard's pages, whose event stream would stay open and keep the page
      // busy until the next step: its origin, so that the renderer stays for the next.
      await page.goto(baseOf(req.url) + "/api/",
                      {waitUntil: "domcontentloaded"});
      idle.push(page);
    } catch (e) {
      err = failure(e);
      code = 1;
      await page.close().catch(() => {});
    }
    return {code, out, err};
  };

  const listener = net.createServer(conn => {
    let buf = "";
    conn.setEncoding("utf8");
    conn.on("data", async chunk => {
      buf += chunk;
      if (buf.length > MAX_REQUEST) return conn.destroy();
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      conn.removeAllListeners("data");
      let answer;
      try {
        answer = await step(JSON.parse(buf.slice(0, nl)));
      } catch (e) {
        answer = {code: 2, out: "", err: "browser_server: " + e.message + "\n"};
      }
      conn.end(JSON.stringify(answer) + "\n");
    });
    conn.on("error", () => {});
  });
  fs.rmSync(sockPath, {force: true});
  await new Promise((resolve, reject) => {
    listener.once("error", reject);
    listener.listen(sockPath, resolve);
  });

  let ending = false;
  const end = async () => {
    if (ending) return;
    ending = true;
    listener.close();
    await browser.close().catch(() => {});
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
})().catch(e => {
  process.stderr.write("browser_server: " + e.message + "\n");
  process.exit(1);
});
