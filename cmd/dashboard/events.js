// skiff dashboard: the one events stream of a browser, shared by all its tabs (a
// SharedWorker). A browser opens at most 6 connections to one host over HTTP/1.1; a
// stream per tab would use them all up with 6 tabs open, and every other request would
// wait. Each tab says which cluster it shows; the stream follows the union of them.
"use strict";

const ports = new Map(); // a tab's port -> the cluster it shows ("" none)
let es = null, url = "";

function tell(msg) {
  for (const p of ports.keys()) p.postMessage(msg);
}

function reconnect() {
  const cl = [...new Set([...ports.values()].filter(Boolean))].sort();
  const u = "/api/v1/events" + (cl.length ? "?clusters=" + cl.map(encodeURIComponent).join(",") : "");
  if (!ports.size) {
    if (es) es.close();
    es = null;
    url = "";
    return;
  }
  if (es && u === url) return;
  if (es) es.close();
  url = u;
  es = new EventSource(u);
  es.addEventListener("change", () => tell({type: "change"}));
  es.onopen = () => tell({type: "open"});
  es.onerror = () => tell({type: "error"});
}

onconnect = e => {
  const port = e.ports[0];
  ports.set(port, "");
  port.onmessage = m => {
    if (m.data.type === "watch") ports.set(port, m.data.cluster || "");
    else if (m.data.type === "bye") ports.delete(port);
    reconnect();
    if (m.data.type === "watch")
      port.postMessage({type: es && es.readyState === 1 ? "open" : "error"});
  };
  port.start();
};
