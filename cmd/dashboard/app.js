// skiff dashboard: the page's code (served by `skiff dashboard`, cmd/dashboard.c).
// Everything shown comes from the JSON API under /api/v1/ and is put in the page as
// text (textContent, text nodes): no string from the API is ever parsed as HTML.
"use strict";

const app = document.getElementById("app");
let view = null;      // the current page: {render(), stop()}
let reloadTimer = 0;

// ---- small helpers ------------------------------------------------------------------

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (HANDLERS.includes(k)) e[k] = v;  // a property: redraw() carries it over
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

const HANDLERS = ["onclick", "oninput", "onchange"];

function present(kids) {
  return kids.flat().filter(k => k !== null && k !== undefined && k !== false);
}

// Replaces node's children with kids (null, undefined and false left out).
function put(node, ...kids) {
  node.replaceChildren(...present(kids));
}

/*
 * Makes node's children look like kids (as put() would) by changing in place what is
 * there: an element of the same tag and key (a job's, a cluster's, a rank's row) stays
 * the same element, its attributes, handlers, text and children made those of the new
 * one. A page redraws on every change of the state; a button replaced between the
 * press and the release of the mouse gets no click (the click was lost), and a focus or
 * a selection would go with it.
 */
function redraw(node, ...kids) {
  patchKids(node, present(kids).map(k => k instanceof Node ? k : document.createTextNode(String(k))));
}

function keyOf(n) {
  if (n.nodeType !== Node.ELEMENT_NODE) return "#" + n.nodeType;
  return n.nodeName + "#" + (n.getAttribute("data-job") ?? n.getAttribute("data-cluster") ??
    n.getAttribute("data-rank") ?? n.getAttribute("data-key") ?? n.getAttribute("data-row") ?? n.id);
}

function patchKids(node, want) {
  const pool = new Map(); // a key -> the children with it, in order
  for (const h of node.childNodes) {
    const k = keyOf(h);
    if (!pool.has(k)) pool.set(k, []);
    pool.get(k).push(h);
  }
  want.forEach((w, i) => {
    const h = (pool.get(keyOf(w)) || []).shift();
    const n = h ? patch(h, w) : w;
    if (node.childNodes[i] !== n) node.insertBefore(n, node.childNodes[i] || null);
  });
  while (node.childNodes.length > want.length) node.lastChild.remove();
}

function patch(h, w) {
  if (h.nodeType !== Node.ELEMENT_NODE) {
    if (h.nodeValue !== w.nodeValue) h.nodeValue = w.nodeValue;
    return h;
  }
  for (const a of [...h.attributes])
    if (!w.hasAttribute(a.name)) h.removeAttribute(a.name);
  for (const a of w.attributes)
    if (h.getAttribute(a.name) !== a.value) h.setAttribute(a.name, a.value);
  for (const k of HANDLERS) if (h[k] !== w[k]) h[k] = w[k];
  patchKids(h, [...w.childNodes]);
  return h;
}

function link(href, text) {
  return el("a", {href: href, "data-link": true}, text);
}

function ago(t) {
  if (!t) return "-";
  const s = Math.max(0, Date.now() / 1000 - t);
  if (s < 60) return Math.floor(s) + "s ago";
  if (s < 3600) return Math.floor(s / 60) + "m ago";
  if (s < 86400) return Math.floor(s / 3600) + "h ago";
  return Math.floor(s / 86400) + "d ago";
}

function span(s) {
  if (s === null || s === undefined || s < 0) return "-";
  s = Math.floor(s);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
  return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
}

function status(s) {
  const cls = /RUNNING|UP|SUCCEEDED|enabled|free/.test(s) ? "ok"
            : /FAIL|ERROR|disabled/.test(s) ? "bad"
            : /CANCEL|STOPPED|ENDED/.test(s) ? "off" : "wait";
  return el("span", {class: "status " + cls, "data-status": s}, s);
}

async function api(path, opts) {
  const r = await fetch(path, Object.assign({credentials: "same-origin"}, opts || {}));
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (r.status === 401) throw new Error("not signed in: open the URL that `skiff dashboard` printed");
  if (!r.ok) throw new Error((body && body.error) || ("HTTP " + r.status));
  return body;
}

function problem(msg) {
  return el("div", {class: "error", role: "alert"}, msg);
}

// An action (POST): confirmed first; its error shown as the CLI says it.
async function act(what, path, done) {
  if (!window.confirm(what + "?")) return;
  const note = document.getElementById("note");
  try {
    await api(path, {method: "POST"});
    if (note) put(note, el("div", {class: "done"}, what + ": done"));
  } catch (e) {
    if (note) put(note, problem(what + ": " + e.message));
  }
  if (done) done();
}

function table(cols, rows, empty) {
  if (!rows.length) return el("p", {class: "muted"}, empty);
  return el("table", {},
    el("thead", {}, el("tr", {}, cols.map(c => el("th", {}, c)))),
    el("tbody", {}, rows));
}

// ---- ANSI colours in logs -----------------------------------------------------------

const ANSI = /\x1b\[([0-9;]*)m|\x1b\[[0-9;?]*[A-Za-z]|\r/g;

function ansiAppend(pre, text, state) {
  let last = 0, m;
  const put = (s) => {
    if (!s) return;
    if (!state.cls.length) { pre.append(document.createTextNode(s)); return; }
    pre.append(el("span", {class: state.cls.join(" ")}, s));
  };
  ANSI.lastIndex = 0;
  while ((m = ANSI.exec(text))) {
    put(text.slice(last, m.index));
    last = ANSI.lastIndex;
    if (m[1] === undefined) continue;        // another escape: dropped
    for (const p of (m[1] || "0").split(";")) {
      const n = Number(p || 0);
      if (n === 0) state.cls = [];
      else if (n === 1) state.cls.push("b");
      else if ((n >= 30 && n <= 37) || (n >= 90 && n <= 97))
        state.cls = state.cls.filter(c => !c.startsWith("c")).concat("c" + n);
      else if (n === 39) state.cls = state.cls.filter(c => !c.startsWith("c"));
    }
  }
  put(text.slice(last));
}

// Streams a log into pre: the tail first (a big log is not loaded whole), then what comes.
function streamOnce(pre, url, follow, onEnd) {
  const ctl = new AbortController();
  const state = {cls: []};
  put(pre);
  (async () => {
    try {
      const r = await fetch(url, {credentials: "same-origin", signal: ctl.signal});
      if (!r.ok) {
        let why = "HTTP " + r.status;
        try { why = (await r.json()).error; } catch (e) { /* not JSON */ }
        pre.append(problem(why));
        return;
      }
      const rd = r.body.getReader(), dec = new TextDecoder();
      for (;;) {
        const {value, done} = await rd.read();
        if (done) break;
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        ansiAppend(pre, dec.decode(value, {stream: true}), state);
        if (follow() && atEnd) pre.scrollTop = pre.scrollHeight;
      }
    } catch (e) {
      if (e.name === "AbortError") return;
      pre.append(problem(e.message));
    }
    if (onEnd) onEnd();
  })();
  return ctl;
}

// A log streamed into pre. A followed log holds one of the 6 connections a browser gives
// this host, so a tab that is hidden lets go of its stream, and takes it up again (the
// same URL: the tail, or the whole log) when it is shown: people switch tabs; what is
// open at once in view is a few.
function streamLog(pre, url, follow, onEnd) {
  let ctl = null, ended = false, paused = false;
  const start = () => {
    ctl = streamOnce(pre, url, follow, () => { ended = true; if (onEnd) onEnd(); });
  };
  const onVisibility = () => {
    if (ended) return;
    if (document.visibilityState === "hidden" && !paused) {
      paused = true;
      ctl.abort();
      pre.setAttribute("data-paused", "");
    } else if (document.visibilityState === "visible" && paused) {
      paused = false;
      pre.removeAttribute("data-paused");
      start();
    }
  };
  document.addEventListener("visibilitychange", onVisibility);
  start();
  return {abort() {
    ended = true;
    document.removeEventListener("visibilitychange", onVisibility);
    ctl.abort();
  }};
}

// ---- pages --------------------------------------------------------------------------

function clustersPage() {
  const filt = {name: "", status: "", infra: ""};
  let data = [], err = null, refreshing = false;
  const body = el("div");
  const load = async (refresh) => {
    try {
      refreshing = !!refresh;
      draw();
      data = await api("/api/v1/clusters" + (refresh ? "?refresh=1" : ""));
      err = null;
    } catch (e) { err = e.message; }
    refreshing = false;
    draw();
  };
  const draw = () => {
    const rows = data.filter(c =>
      c.name.includes(filt.name) && (!filt.status || c.status === filt.status) &&
      (c.infra || "").includes(filt.infra)).map(c => el("tr", {"data-cluster": c.name},
        el("td", {}, link("/clusters/" + encodeURIComponent(c.name), c.name)),
        el("td", {}, c.infra), el("td", {}, c.resources || "-"),
        el("td", {}, String(c.num_nodes)), el("td", {}, status(c.status)),
        el("td", {}, c.autostop ? (c.autostop.idle_minutes + "m" + (c.autostop.down ? " (down)" : "")) : "-"),
        el("td", {}, ago(c.launched_at)),
        el("td", {}, ((c.nodes || [])[0] || {}).user || "-")));
    redraw(body,
      err ? problem(err) : null,
      table(["NAME", "INFRA", "RESOURCES", "NODES", "STATUS", "AUTOSTOP", "LAUNCHED", "USER"],
            rows, data.length ? "No cluster matches." : "No clusters. Launch one with `skiff launch`."));
  };
  const statuses = el("select", {id: "f-status", onchange: e => { filt.status = e.target.value; draw(); }},
    ["", "UP", "INIT", "STOPPED", "ENDED"].map(s => el("option", {value: s}, s || "any status")));
  put(app,
    el("h1", {}, "Clusters"),
    el("div", {class: "bar"},
      el("input", {id: "f-name", placeholder: "name", oninput: e => { filt.name = e.target.value; draw(); }}),
      statuses,
      el("input", {id: "f-infra", placeholder: "infra", oninput: e => { filt.infra = e.target.value; draw(); }}),
      el("button", {id: "refresh", onclick: () => load(true)}, "Refresh from the nodes")),
    el("div", {id: "note"}), body);
  load(false);
  return {render: () => { if (!refreshing) load(false); }, stop() {}};
}

function clusterPage(name) {
  let cl = null, jobs = [], err = null, jerr = null, logCtl = null, logJob = null;
  const info = el("div"), jobsBox = el("div"), logBox = el("div", {class: "logs"});
  const follow = el("input", {type: "checkbox", id: "follow", checked: true});
  const base = "/api/v1/clusters/" + encodeURIComponent(name);
  let asked = false;
  const load = async () => {
    try {
      const got = (await api(base))[0] || null;
      // What the nodes said when asked stays until they are asked again.
      if (got && cl) (got.nodes || []).forEach((n, i) => {
        const was = (cl.nodes || [])[i];
        if (!n.supervisor && was && was.node === n.node) n.supervisor = was.supervisor;
      });
      cl = got; err = null;
    } catch (e) { err = e.message; }
    try { jobs = await api(base + "/jobs"); jerr = null; } catch (e) { jerr = e.message; }
    draw();
    if (!asked && cl && cl.status === "UP") { asked = true; askNodes(); }
  };
  // status -r of this cluster: each node's supervisor asked (a dead one takes seconds).
  const askNodes = async () => {
    try { cl = (await api(base + "?refresh=1"))[0] || cl; err = null; } catch (e) { err = e.message; }
    draw();
  };
  const supervisor = s => !s ? el("span", {class: "muted"}, "not asked")
    : s.answers ? [status("UP"), " pid " + s.pid + ", skiff " + (s.version || "?")]
    : [el("span", {class: "status bad", "data-status": "NO ANSWER"}, "NO ANSWER"), " " + (s.why || "")];
  const openLog = (id, all) => {
    if (logCtl) logCtl.abort();
    logJob = id;
    const pre = el("pre", {id: "log"});
    put(logBox,
      el("h2", {}, "Job " + id + " logs"),
      el("div", {class: "bar"}, el("label", {}, follow, " follow"),
        all ? null : el("button", {onclick: () => openLog(id, true)}, "Show the whole log"),
        el("span", {class: "muted"}, all ? "the whole log" : "the last 2000 lines first")),
      pre);
    logCtl = streamLog(pre, base + "/jobs/" + id + "/logs?follow=1" + (all ? "" : "&tail=2000"),
                       () => follow.checked);
  };
  const draw = () => {
    redraw(info, err ? problem(err) : !cl ? el("p", {class: "muted"}, "No such cluster.") :
      el("div", {},
        el("p", {}, status(cl.status), " on ", cl.infra, " \u00b7 ", cl.resources || "",
           " \u00b7 launched ", ago(cl.launched_at),
           cl.autostop ? " \u00b7 autostop " + cl.autostop.idle_minutes + "m" : ""),
        el("div", {class: "bar"},
          el("button", {onclick: () => act("Stop cluster " + name, base + "/stop", load)}, "Stop"),
          el("button", {onclick: () => act("Start cluster " + name, base + "/start", load)}, "Start"),
          el("button", {class: "danger", onclick: () => act("Tear down cluster " + name, base + "/down", load)}, "Down")),
        el("h2", {}, "Nodes"),
        el("div", {class: "bar"}, el("button", {id: "ask-nodes", onclick: askNodes}, "Ask the nodes")),
        table(["RANK", "IP", "ADDRESS", "USER", "PORT", "NODE", "SUPERVISOR"], (cl.nodes || []).map(n =>
          el("tr", {"data-rank": n.rank}, el("td", {}, String(n.rank)), el("td", {}, n.ip || "-"),
             el("td", {}, n.address || "-"), el("td", {}, n.user || "-"),
             el("td", {}, n.port ? String(n.port) : "-"), el("td", {}, n.node || "-"),
             el("td", {class: "supervisor"}, supervisor(n.supervisor)))), "No nodes.")));
    redraw(jobsBox, el("h2", {}, "Jobs"), jerr ? problem(jerr) :
      table(["ID", "NAME", "USER", "SUBMITTED", "DURATION", "STATUS", "EXIT CODES", ""],
        jobs.slice().reverse().map(j => el("tr", {"data-job": j.id},
          el("td", {}, String(j.id)), el("td", {class: "name"}, j.name || "-"),
          el("td", {}, j.user || "-"), el("td", {}, ago(j.submitted_at)),
          el("td", {}, j.started_at ? span((j.ended_at || Date.now() / 1000) - j.started_at) : "-"),
          el("td", {}, status(j.status)),
          el("td", {}, (j.exit_codes || []).map(c => c === null ? "-" : String(c)).join(",") || "-"),
          el("td", {},
            el("button", {onclick: () => openLog(j.id, false)}, "Logs"),
            /RUNNING|PENDING|SETTING_UP|INIT/.test(j.status) ?
              el("button", {class: "danger", onclick: () => act("Cancel job " + j.id + " on " + name,
                base + "/jobs/" + j.id + "/cancel", load)}, "Cancel") : null))),
        "No jobs."));
  };
  put(app, el("h1", {}, "Cluster ", el("span", {class: "name"}, name)),
                      el("div", {id: "note"}), info, jobsBox, logBox);
  load();
  return {render: load, stop() { if (logCtl) logCtl.abort(); }};
}

function jobsPage() {
  let data = [], err = null;
  const body = el("div");
  const load = async () => {
    try { data = await api("/api/v1/jobs"); err = null; } catch (e) { err = e.message; }
    redraw(body, err ? problem(err) :
      table(["ID", "NAME", "REQUESTED", "SUBMITTED", "JOB DURATION", "#RECOVERIES", "STATUS", "CLUSTER", "DETAILS", ""],
        data.slice().reverse().map(j => el("tr", {"data-job": j.id},
          el("td", {}, link("/jobs/" + j.id, String(j.id))), el("td", {class: "name"}, j.name || "-"),
          el("td", {}, j.requested || "-"), el("td", {}, ago(j.submitted_at)),
          el("td", {}, span(j.job_duration)), el("td", {}, String(j.recoveries)),
          el("td", {}, status(j.status)), el("td", {}, j.cluster || "-"),
          el("td", {class: "details"}, j.details || ""),
          el("td", {}, /SUCCEEDED|FAILED|CANCELLED/.test(j.status) ? null :
            el("button", {class: "danger", onclick: () => act("Cancel managed job " + j.id,
              "/api/v1/jobs/" + j.id + "/cancel", load)}, "Cancel")))),
        "No managed jobs. Submit one with `skiff jobs launch`."));
  };
  const place = el("p", {class: "muted"});
  put(app, el("h1", {}, "Managed jobs"), place, el("div", {id: "note"}), body);
  api("/api/v1/config").then(c => {
    const k = (c.keys || []).find(k => k.key === "jobs.controller.resources.infra");
    put(place, "The controller runs ", k ? el("span", {class: "name"}, "on its own cluster on " + k.value)
                                           : "on this machine",
        k ? " (jobs.controller.resources.infra, " + (k.file || "") + ")" : "");
  }).catch(() => {});
  load();
  return {render: load, stop() {}};
}

function jobPage(id) {
  let j = null, err = null, logCtl = null;
  const info = el("div"), pre = el("pre", {id: "log"});
  const follow = el("input", {type: "checkbox", id: "follow", checked: true});
  const load = async () => {
    try { j = (await api("/api/v1/jobs")).find(x => String(x.id) === String(id)) || null; err = null; }
    catch (e) { err = e.message; }
    redraw(info, err ? problem(err) : !j ? el("p", {class: "muted"}, "No such managed job.") :
      el("div", {},
        el("p", {}, status(j.status), " \u00b7 ", j.name || "-", " \u00b7 submitted ", ago(j.submitted_at),
           " \u00b7 recoveries ", String(j.recoveries), j.cluster ? " \u00b7 on " + j.cluster : ""),
        j.details ? el("p", {class: "details"}, j.details) : null,
        el("h2", {}, "Tasks"),
        table(["TASK", "NAME", "REQUESTED", "STATUS", "JOB DURATION", "#RECOVERIES"],
          (j.task_rows || []).map(t => el("tr", {}, el("td", {}, String(t.task)),
            el("td", {class: "name"}, t.name || "-"), el("td", {}, t.requested || "-"),
            el("td", {}, status(t.status)), el("td", {}, span(t.job_duration)),
            el("td", {}, String(t.recoveries)))), "No task rows.")));
  };
  const which = el("select", {id: "which", onchange: () => open()},
    el("option", {value: "task"}, "the task's logs"),
    el("option", {value: "controller"}, "the controller's: launches, recoveries and why"));
  const open = () => {
    if (logCtl) logCtl.abort();
    logCtl = streamLog(pre, "/api/v1/jobs/" + id + "/logs?" +
                       (which.value === "controller" ? "controller=1" : "follow=1"), () => follow.checked);
  };
  put(app, el("h1", {}, "Managed job " + id), el("div", {id: "note"}), info,
    el("h2", {}, "Logs"), el("div", {class: "bar"}, which, el("label", {}, follow, " follow")), pre);
  load();
  open();
  return {render: load, stop() { if (logCtl) logCtl.abort(); }};
}

function infraPage() {
  const body = el("div", {}, el("p", {class: "muted"}, "Asking each infra (at most 5 s)\u2026"));
  put(app, el("h1", {}, "Infra"), body);
  const load = async () => {
    try {
      const v = await api("/api/v1/infra");
      // What each usable infra has (skiff check's inventory): a table each, with the
      // cluster that books a row where clusters book them.
      const tables = [];
      for (const i of v)
        for (const t of i.inventory || []) {
          const cols = t.rows.length ? Object.keys(t.rows[0]).filter(c => c !== "cluster") : [];
          const booked = t.rows.some(r => "cluster" in r);
          const head = cols.map(c => c.toUpperCase()).concat(booked ? ["CLUSTER"] : []);
          const rows = t.rows.map(r => el("tr", {"data-row": i.infra + "/" + cols.map(c => r[c]).slice(0, 2).join("/")},
            cols.map(c => el("td", {}, r[c] || "-")).concat(booked ? [el("td", {},
              r.cluster ? link("/clusters/" + encodeURIComponent(r.cluster), r.cluster)
                        : "cluster" in r ? status("free") : "-")] : [])));
          tables.push(el("h2", {}, i.infra + ": " + t.of),
                      t.error ? problem(t.error) : null,
                      table(head, rows, "None."));
        }
      redraw(body, table(["INFRA", "STATE", "WHY"], v.map(i => el("tr", {},
        el("td", {}, i.infra), el("td", {}, status(i.enabled ? "enabled" : "disabled")),
        el("td", {}, i.reason || ""))), "No infra."), tables);
    } catch (e) { redraw(body, problem(e.message)); }
  };
  load();
  return {render() {}, stop() {}};
}

function configPage() {
  const body = el("div");
  put(app, el("h1", {}, "Config"), body);
  const where = k => k.file ? k.file + (k.line ? ":" + k.line + ":" + k.col : "") : "-";
  const load = async () => {
    try {
      const c = await api("/api/v1/config");
      redraw(body,
        el("p", {}, "Config file: ", el("span", {class: "name"}, c.file || "(none)"),
           el("span", {class: "muted"}, " \u00b7 then each --config; a task's own config: goes between them")),
        (c.errors || []).map(e => problem(where(e) + ": " + e.why)),
        el("h2", {}, "Keys set"),
        table(["KEY", "VALUE", "FROM"], c.keys.map(k => el("tr", {"data-key": k.key},
          el("td", {class: "name"}, k.key), el("td", {class: "name"}, k.value),
          el("td", {class: "muted"}, where(k)))), "No key is set: every default applies."),
        el("h2", {}, "Read and ignored"),
        table(["WHERE", "WHY"], (c.ignored || []).map(i => el("tr", {},
          el("td", {class: "muted"}, where(i)), el("td", {}, i.why))), "Nothing is ignored."));
    } catch (e) { redraw(body, problem(e.message)); }
  };
  load();
  return {render: load, stop() {}};
}

// ---- routing and live updates --------------------------------------------------------

function route() {
  if (view) view.stop();
  const p = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll("[data-nav]"))
    a.classList.toggle("on", a.dataset.nav === (p[0] || "clusters"));
  if (p[0] === "clusters" && p[1]) view = clusterPage(p[1]);
  else if (p[0] === "jobs" && p[1]) view = jobPage(p[1]);
  else if (p[0] === "jobs") view = jobsPage();
  else if (p[0] === "infra") view = infraPage();
  else if (p[0] === "config") view = configPage();
  else view = clustersPage();
  document.title = "skiff \u00b7 " + (p.join(" ") || "clusters");
  live(p[0] === "clusters" && p[1] ? p[1] : null);
}

document.addEventListener("click", e => {
  const a = e.target.closest && e.target.closest("a[data-link]");
  if (!a || e.ctrlKey || e.metaKey || e.button !== 0) return;
  e.preventDefault();
  history.pushState(null, "", a.getAttribute("href"));
  route();
});
window.addEventListener("popstate", route);

// A change of the launcher's state (a job ends, a cluster goes) redraws the page; on a
// cluster's page, so does the end of one of its jobs (the dashboard watches its nodes).
// One events stream serves every tab of the browser (a SharedWorker, /static/events.js):
// a stream per tab would take one of the browser's 6 connections to the dashboard each.
let es = null, chan = null;
function changed() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(() => { if (view) view.render(); }, 50);
}
function dot(on) {
  document.getElementById("live").classList.toggle("on", on);
}
function live(cluster) {
  if (window.SharedWorker) {
    if (!chan) {
      chan = new SharedWorker("/static/events.js").port;
      chan.onmessage = m => {
        if (m.data.type === "change") changed();
        else dot(m.data.type === "open");
      };
      chan.start();
      window.addEventListener("pagehide", () => chan.postMessage({type: "bye"}));
    }
    chan.postMessage({type: "watch", cluster: cluster || ""});
    return;
  }
  if (es) es.close();
  es = new EventSource("/api/v1/events" + (cluster ? "?clusters=" + encodeURIComponent(cluster) : ""));
  es.addEventListener("change", changed);
  es.onopen = () => dot(true);
  es.onerror = () => dot(false);
}

route();
