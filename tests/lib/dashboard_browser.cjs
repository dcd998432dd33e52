// The dashboard in a real Chromium (t0830, t0831): the steps, runStep(), which the test
// script's browser server runs (tests/lib/browser_server.cjs, sent by browser_step.py),
// or one step a run in a Chromium of its own, its findings on stdout, where there is no
// server:
//
//   node dashboard_browser.cjs URL STEP ARGS...
//
// URL is the one `skiff dashboard` printed (with its token). Every step opens it first
// (the page swaps the token for a cookie), fails (exit 1, the reason on stderr) when a
// JavaScript dialog other than an expected confirm() opens, and when the page logs an
// error. Steps:
//   row PATH SELECTOR TEXT       PATH shows an element SELECTOR whose text has TEXT
//   text PATH SELECTOR           prints SELECTOR's textContent (the first one) at PATH
//   noscript PATH                no <img>, <script> or onerror= came from the data
//   wait-text PATH SELECTOR TEXT READY_FILE
//                                touches READY_FILE once the page is up, then waits (no
//                                reload) until SELECTOR has TEXT; prints the ms it took
//   logs CLUSTER JOB TEXT...     the job's log panel streams each TEXT (in any order);
//                                prints the log's text
//   click PATH SELECTOR accept|dismiss WAIT_SELECTOR WAIT_TEXT
//                                clicks (a confirm() follows) and waits for WAIT_TEXT
//   tabs N PATH SELECTOR         N tabs of PATH open at once, each showing SELECTOR
//   filter NAME STATUS INFRA     the clusters page filtered (an empty one: not set); prints
//                                "shown: " and the clusters left, in order
//   log-tabs N CLUSTER JOB TEXT  N tabs, one after the other, each follows the job's log
//                                until it shows TEXT, then is hidden (as when the person
//                                switches to the next tab); then the first is shown again
//                                and shows TEXT again
//   kept CLUSTER JOB             the cluster's page, once its nodes were asked: the job's
//                                Logs button is the same element after "Ask the nodes"
//                                redrew the page, and a click on it opens the log
//   shot PATH FILE [SELECTOR [CLICK]]
//                                a screenshot of PATH (after SELECTOR shows, CLICK clicked)
"use strict";
const {chromium} = require("playwright-core");

const VIEWPORT = {width: 1280, height: 800};
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu"];
const WAIT = 20000;
/*
 * A log's lines reach the page over the nodes' own channels (a gang: an ssh session per
 * rank): with the suite's three lanes and another Chromium on 2 cores that took over 20 s
 * once. What waits on a node waits as long as the actions do (60 s).
 */
const NODE_WAIT = 60000;

// A step that did not find what it looks for: its message is the step's whole report.
class StepFailed extends Error {}

function fail(msg) {
  throw new StepFailed(msg);
}

// The dashboard's address: URL without its token.
function baseOf(url) {
  return url.replace(/\/\?token=.*/, "");
}

function launchBrowser() {
  return chromium.launch({executablePath: process.env.BROWSER_CHROMIUM || "/usr/bin/chromium",
                         args: CHROMIUM_ARGS});
}

// What a failed step says on stderr.
function failure(e) {
  return "dashboard_browser: " + e.message + "\n";
}

/*
 * Runs one step on page (in a context of the caller's, where other steps may run at the
 * same time; the tabs the step opens, it closes) and gives its findings to out(text).
 * Throws StepFailed with the reason, the page's own note on its last action and its
 * errors, when the step fails.
 */
async function runStep(page, url, step, args, out) {
  const base = baseOf(url);
  let confirmAnswer = null;
  const problems = [];
  const onDialog = async d => {
    if (d.type() === "confirm" && confirmAnswer !== null) {
      out("confirm: " + d.message() + "\n");
      if (confirmAnswer) await d.accept(); else await d.dismiss();
      return;
    }
    problems.push("unexpected " + d.type() + " dialog: " + d.message());
    await d.dismiss();
  };
  const onError = e => problems.push("page error: " + e.message);
  const opened = [];
  const newTab = async () => {
    const t = await page.context().newPage();
    opened.push(t);
    return t;
  };
  page.on("dialog", onDialog);
  page.on("pageerror", onError);
  try {
    // The token URL: the cookie is set, the token leaves the address bar.
    await page.goto(url, {waitUntil: "domcontentloaded"});
    if (page.url().includes("token=")) fail("the token stayed in the URL: " + page.url());
    const go = async p => page.goto(base + p, {waitUntil: "domcontentloaded"});
    if (step === "row") {
      await go(args[0]);
      await page.locator(args[1], {hasText: args[2]}).first().waitFor({timeout: WAIT});
      out("found\n");
    } else if (step === "text") {
      await go(args[0]);
      const loc = page.locator(args[1]).first();
      await loc.waitFor({timeout: WAIT});
      out((await loc.textContent()) + "\n");
    } else if (step === "noscript") {
      await go(args[0]);
      await page.locator("table").first().waitFor({timeout: WAIT});
      await page.waitForTimeout(300);
      const n = await page.evaluate(() =>
        document.querySelectorAll("main img, main script, main [onerror]").length);
      out("injected elements: " + n + "\n");
    } else if (step === "wait-text") {
      await go(args[0]);
      await page.locator("table, p.muted").first().waitFor({timeout: WAIT});
      require("fs").writeFileSync(args[3], "ready\n");
      const t0 = Date.now();
      await page.locator(args[1], {hasText: args[2]}).first().waitFor({timeout: NODE_WAIT});
      out("shown after " + (Date.now() - t0) + " ms\n");
    } else if (step === "logs") {
      await go("/clusters/" + args[0]);
      await page.locator(`tr[data-job="${args[1]}"] button`, {hasText: "Logs"}).click({timeout: WAIT});
      for (const text of args.slice(2))
        await page.locator("pre#log", {hasText: text}).waitFor({timeout: NODE_WAIT});
      out(await page.locator("pre#log").innerHTML() + "\n");
    } else if (step === "click") {
      await go(args[0]);
      confirmAnswer = args[2] === "accept";
      await page.locator(args[1]).first().click({timeout: WAIT});
      await page.locator(args[3], {hasText: args[4]}).first().waitFor({timeout: NODE_WAIT});
      const note = await page.locator("#note").textContent();
      out("note: " + note + "\n");
    } else if (step === "tabs") {
      const tabs = [page];
      for (let i = 1; i < Number(args[0]); i++) tabs.push(await newTab());
      for (const t of tabs) {
        await t.goto(base + args[1], {waitUntil: "domcontentloaded", timeout: WAIT});
        await t.locator(args[2]).first().waitFor({timeout: WAIT});
      }
      out(tabs.length + " tabs drawn\n");
    } else if (step === "filter") {
      await go("/clusters");
      await page.locator("tr[data-cluster]").first().waitFor({timeout: WAIT});
      if (args[0]) await page.fill("#f-name", args[0]);
      if (args[1]) await page.selectOption("#f-status", args[1]);
      if (args[2]) await page.fill("#f-infra", args[2]);
      await page.waitForTimeout(300);
      const shown = await page.evaluate(() =>
        [...document.querySelectorAll("tr[data-cluster]")].map(r => r.dataset.cluster).join(" "));
      out("shown: " + shown + "\n");
    } else if (step === "log-tabs") {
      // document.visibilityState as a tab switch sets it (headless tabs are all "visible").
      const show = (t, state) => t.evaluate(v => {
        Object.defineProperty(document, "visibilityState", {configurable: true, get: () => v});
        document.dispatchEvent(new Event("visibilitychange"));
      }, state);
      const tabs = [];
      for (let i = 0; i < Number(args[0]); i++) {
        const t = i ? await newTab() : page;
        await t.goto(base + "/clusters/" + args[0 + 1], {waitUntil: "domcontentloaded", timeout: WAIT});
        await t.locator(`tr[data-job="${args[2]}"] button`, {hasText: "Logs"}).click({timeout: WAIT});
        await t.locator("pre#log", {hasText: args[3]}).waitFor({timeout: NODE_WAIT});
        await show(t, "hidden");
        await t.locator("pre#log[data-paused]").waitFor({timeout: WAIT});
        tabs.push(t);
      }
      await show(tabs[0], "visible");
      await tabs[0].locator("pre#log:not([data-paused])", {hasText: args[3]}).waitFor({timeout: NODE_WAIT});
      out(tabs.length + " tabs followed the log\n");
    } else if (step === "kept") {
      await go("/clusters/" + args[0]);
      await page.locator("td.supervisor", {hasText: "pid"}).first().waitFor({timeout: NODE_WAIT});
      const button = await page.locator(`tr[data-job="${args[1]}"] button`, {hasText: "Logs"}).elementHandle({timeout: WAIT});
      await button.evaluate(b => { b.skiffMark = "before"; });
      const asked = page.waitForResponse(r => r.url().includes("?refresh=1"), {timeout: NODE_WAIT});
      await page.locator("#ask-nodes").click({timeout: WAIT});
      await asked;
      await page.waitForTimeout(300);
      const same = await button.evaluate(b => b.isConnected && b.skiffMark === "before");
      out("the same button after the redraw: " + same + "\n");
      await button.click({timeout: WAIT});
      await page.locator("pre#log").waitFor({timeout: WAIT});
      out("its log opened\n");
    } else if (step === "shot") {
      await go(args[0]);
      if (args[2]) await page.locator(args[2]).first().waitFor({timeout: WAIT});
      if (args[3]) await page.locator(args[3]).first().click({timeout: WAIT});
      await page.waitForTimeout(args[3] ? 3000 : 500);
      await page.screenshot({path: args[1], fullPage: false});
      out("shot " + args[1] + "\n");
    } else {
      fail("unknown step " + step);
    }
  } catch (e) {
    // What the page said of its last action (an error instead of "done"), if anything.
    const note = await page.locator("#note").first().textContent({timeout: 1000}).catch(() => null);
    fail(e.message + (note ? "\nthe page's note: " + note : "") +
         (problems.length ? "\n" + problems.join("\n") : ""));
  } finally {
    page.off("dialog", onDialog);
    page.off("pageerror", onError);
    for (const t of opened) await t.close().catch(() => {});
  }
  if (problems.length) fail(problems.join("\n"));
}

module.exports = {runStep, launchBrowser, baseOf, failure, VIEWPORT};

if (require.main === module) {
  (async () => {
    const [url, step, ...args] = process.argv.slice(2);
    const browser = await launchBrowser();
    const page = await (await browser.newContext({viewport: VIEWPORT})).newPage();
    let code = 0;
    try {
      await runStep(page, url, step, args, text => process.stdout.write(text));
    } catch (e) {
      process.stderr.write(failure(e));
      code = 1;
    }
    await browser.close();
    process.exit(code);
  })();
}
