// The sensorstorm status page: it draws the snapshots that /events sends
// about once a second. No framework, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 236, NODE_H = 92, COL = 300, ROW = 112;
const MIN_SPEED = 0.01, MAX_SPEED = 10000;

let shape = "";      // the graph drawn: component names and edges
let last = null;     // the latest snapshot
let chosenByUser = false; // the field to plot was picked on the page
let finished = false;     // the run ended: the page shows its final state
let lastETA = null;       // the ETA shown, which stands still while paused

function el(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

function human(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return n < 10 ? n.toFixed(1) : n.toFixed(0);
}

function bytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(1) + " GiB";
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
  return n + " B";
}

function duration(s) {
  if (s == null) return "-";
  const a = Math.abs(s);
  if (a < 60) return s.toFixed(1) + " s";
  if (a < 3600) return (s / 60).toFixed(1) + " min";
  if (a < 86400 * 2) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(0) + " d";
}

function isoTime(ms) { return new Date(ms).toISOString().replace(".000Z", "Z"); }

// clock is the UTC time of day of ms, as the plots' time axis shows it.
function clock(ms) { return new Date(ms).toISOString().slice(11, 19); }

// num shows a plotted value with at most 4 significant digits.
function num(v) { return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4))); }

// layers places each component in the column after its farthest input.
function layers(snap) {
  const col = {};
  for (const c of snap.components) col[c.name] = 0;
  for (let i = 0; i < snap.components.length; i++) {
    let moved = false;
    for (const e of snap.edges) {
      if (col[e.to] < col[e.from] + 1) { col[e.to] = col[e.from] + 1; moved = true; }
    }
    if (!moved) break;
  }
  return col;
}

function drawGraph(snap) {
  const svg = $("graph");
  svg.textContent = "";
  const col = layers(snap), rows = {}, pos = {};
  for (const c of snap.components) {
    const x = col[c.name], y = rows[x] || 0;
    rows[x] = y + 1;
    pos[c.name] = { x: 10 + x * COL, y: 10 + y * ROW };
  }
  const h = Math.max(...Object.values(rows)) * ROW + 10;
  svg.setAttribute("viewBox", `0 0 ${Math.max(...Object.values(col)) * COL + NODE_W + 20} ${h}`);
  svg.style.maxWidth = (Math.max(...Object.values(col)) * COL + NODE_W + 20) + "px";
  for (const e of snap.edges) {
    const a = pos[e.from], b = pos[e.to];
    const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2, mx = (x1 + x2) / 2;
    el("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)" }, svg);
    const label = el("text", { class: "edge-label", x: mx, y: (y1 + y2) / 2 - 4, "text-anchor": "middle" }, svg);
    label.textContent = e.grouping + (e.stream ? ` [${e.stream}]` : "");
  }
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" }, el("defs", {}, svg));
  el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#98a2b3" }, marker);
  for (const c of snap.components) {
    const g = el("g", { class: "node " + c.kind, "data-component": c.name, transform: `translate(${pos[c.name].x},${pos[c.name].y})` }, svg);
    el("rect", { width: NODE_W, height: NODE_H }, g);
    const name = el("text", { class: "name", x: 8, y: 17 }, g);
    name.textContent = c.name;
    const kind = el("text", { x: NODE_W - 8, y: 17, "text-anchor": "end" }, g);
    kind.textContent = `${c.kind} ×${c.parallelism}`;
    ["flow", "buffer", "bad", "acks"].forEach((line, i) => el("text", { "data-line": line, x: 8, y: 36 + i * 16 }, g));
  }
}

// field writes a figure with its exact value in data-value, for tools.
function field(parent, name, label, value, shown) {
  const t = el("tspan", { "data-field": name, "data-value": value }, parent);
  t.textContent = `${label} ${shown === undefined ? value : shown}`;
  parent.appendChild(document.createTextNode("  "));
  return t;
}

function updateGraph(snap) {
  const key = JSON.stringify([snap.components.map((c) => c.name), snap.edges]);
  if (key !== shape) { drawGraph(snap); shape = key; }
  for (const c of snap.components) {
    const g = document.querySelector(`#graph [data-component="${CSS.escape(c.name)}"]`);
    const line = (n) => { const t = g.querySelector(`[data-line="${n}"]`); t.textContent = ""; return t; };
    let t = line("flow");
    field(t, "in", "in", c.in, `${c.in} (${human(c.rate_in)}/s)`);
    field(t, "out", "out", c.out, `${c.out} (${human(c.rate_out)}/s)`);
    t = line("buffer");
    field(t, "buffered", "buffer", c.buffered, `${c.buffered} (${bytes(c.buffered_bytes)})`);
    field(t, "watermark_lag", "lag", c.watermark_lag == null ? "" : c.watermark_lag, duration(c.watermark_lag));
    t = line("bad");
    for (const [f, label] of [["late", "late"], ["invalid", "invalid"], ["dead_letters", "dead"]]) {
      field(t, f, label, c[f]).setAttribute("class", c[f] > 0 ? "bad" : "");
    }
    t = line("acks");
    if (c.kind === "source") {
      field(t, "acked", "acked", c.acked);
      field(t, "failed", "failed", c.failed);
      field(t, "pending", "pending", snap.pending_trees);
    } else {
      field(t, "errors", "errors", c.errors);
      field(t, "behind", "behind", c.behind);
    }
  }
}

function updateReplay(snap) {
  const r = snap.replay;
  $("replay").hidden = !r;
  if (!r) return;
  $("position").textContent = r.position.startsWith("0001") ? "-" : r.position;
  $("speed").textContent = r.done ? "done" : r.paused ? `paused (${r.speed})` : r.speed === "max" ? "unpaced" : r.speed;
  if (!r.paused) lastETA = r.eta;
  $("eta").textContent = r.done ? "done" : duration(lastETA) + (r.paused && lastETA != null ? " (paused)" : "");
  $("read").textContent = r.read;
  $("progress").style.width = ((r.progress || 0) * 100) + "%";
  $("buttons").hidden = !snap.control || r.done;
}

// tag makes an HTML element of class cls, if given, in parent.
function tag(name, parent, cls) {
  const e = document.createElement(name);
  if (cls) e.className = cls;
  parent.appendChild(e);
  return e;
}

// updateConnectors draws a panel of each source or sink with a state of
// its own: its connections, its counters and what waits in its spool.
function updateConnectors(snap) {
  const box = $("connectors"), cs = snap.connectors || [];
  box.textContent = "";
  const kinds = {}, instances = {};
  for (const c of snap.components) kinds[c.name] = c.kind;
  for (const c of cs) instances[c.component] = (instances[c.component] || 0) + 1;
  for (const c of cs) {
    const panel = tag("section", box, "connector");
    panel.dataset.connector = c.component;
    panel.dataset.instance = c.instance;
    const h = tag("h2", panel);
    h.textContent = c.component + (instances[c.component] > 1 ? ` #${c.instance}` : "") + " ";
    tag("small", h).textContent = kinds[c.component] || "";
    if (c.connections.length > 0) {
      const row = tag("div", panel, "row");
      for (const k of c.connections) {
        const s = tag("span", row, "connection " + k.state);
        s.dataset.address = k.address;
        s.textContent = `${k.address}: ${k.state}`;
      }
    }
    const row = tag("div", panel, "row");
    for (const k of c.counters) figure(row, "counter", k.name, k.name, k.value);
    if (c.backlog) drawBacklog(panel, c.backlog);
  }
}

// figure shows "label value" in row, the value marked with data-key=name.
function figure(row, key, name, label, value) {
  const s = tag("span", row);
  s.textContent = label + " ";
  const b = tag("b", s);
  b.dataset[key] = name;
  b.textContent = value;
}

// drawBacklog shows what waits in a connector's spool for the pipeline,
// and loudly the disk quota reached, when it takes nothing more in.
function drawBacklog(panel, b) {
  const row = tag("div", panel, "row backlog");
  figure(row, "backlog", "messages", "backlog", `${b.messages} (${bytes(b.bytes)})`);
  figure(row, "backlog", "on_disk", "on disk", b.on_disk);
  figure(row, "backlog", "age", "oldest", b.messages ? duration(b.age) : "-");
  figure(row, "backlog", "drain", "drain", `${human(b.drain_rate)}/s (in ${human(b.add_rate)}/s)`);
  figure(row, "backlog", "catch_up", "caught up in", !b.messages ? "-" : b.catch_up != null ? duration(b.catch_up) : "not shrinking");
  if (b.at_quota) {
    tag("div", panel, "quota").textContent = "At the disk quota: taking nothing more in; senders hold, retry or drop what they send";
  }
}

function updateSensors(snap) {
  const tap = snap.tap;
  $("sensors").hidden = !tap;
  if (!tap) return;
  $("sensors-waiting").hidden = tap.series.length > 0;
  const select = $("field"), fields = new Set();
  for (const s of tap.series) s.fields.forEach((f) => fields.add(f));
  const have = [...select.options].map((o) => o.value);
  for (const f of fields) if (!have.includes(f)) select.add(new Option(f, f));
  if (!chosenByUser && select.options.length > 0) select.value = reading(tap.series) || select.value;
  const chosen = select.value;
  $("unfollowed").textContent = tap.unfollowed ? `(${tap.unfollowed} particles of further series not shown)` : "";
  const plots = $("plots");
  plots.textContent = "";
  const common = commonParts(tap.series);
  const sorted = [...tap.series].sort((a, b) => a.key.localeCompare(b.key, undefined, { numeric: true }));
  for (const s of sorted) plots.appendChild(plot(s, chosen, common));
}

// MAIN_FIELDS are the names of what sensors are usually deployed for,
// preferred over their housekeeping (an internal temperature, a voltage).
const MAIN_FIELDS = ["temperature", "value", "humidity", "co2", "pressure", "power", "level", "speed"];

// reading picks the field to plot first: a main field if a series has
// one, else the first with a fraction in its values, a reading rather
// than a counter or a sequence number.
function reading(series) {
  const fractional = [];
  for (const s of series) {
    for (let i = 0; i < s.fields.length; i++) {
      if (s.points.some((p) => p[i + 1] != null && !Number.isInteger(p[i + 1]))) fractional.push(s.fields[i]);
    }
  }
  const main = MAIN_FIELDS.find((f) => fractional.includes(f));
  return main || fractional[0] || "";
}

// commonParts returns the parts of the series keys (the measurement, each
// tag) that every series shares: a plot names its series by the others.
function commonParts(series) {
  const counts = new Map();
  for (const s of series) for (const p of new Set(s.key.split(","))) counts.set(p, (counts.get(p) || 0) + 1);
  return new Set([...counts].filter(([, n]) => n === series.length && series.length > 1).map(([p]) => p));
}

// plot draws one series' chosen field over its recent points, and its
// dead-lettered particles as ticks at the bottom, with its scale (the
// lowest and highest value shown) on the left and its event-time span
// below.
function plot(s, name, common) {
  const div = document.createElement("div");
  div.className = "plot";
  div.dataset.series = s.key;
  const key = document.createElement("div");
  key.className = "key";
  key.title = s.key;
  key.textContent = s.key.split(",").filter((p) => !common.has(p)).join(",") || s.key;
  div.appendChild(key);
  const chart = document.createElement("div");
  chart.className = "chart";
  const yaxis = document.createElement("div");
  yaxis.className = "yaxis";
  chart.appendChild(yaxis);
  div.appendChild(chart);
  const xaxis = document.createElement("div");
  xaxis.className = "xaxis";
  div.appendChild(xaxis);
  const W = 200, H = 60, svg = el("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none" }, chart);
  const i = s.fields.indexOf(name) + 1;
  const pts = i > 0 ? s.points.filter((p) => p[i] != null) : [];
  const times = pts.map((p) => p[0]).concat(s.marks.map((m) => m.t));
  if (times.length === 0) return div;
  const t0 = Math.min(...times), t1 = Math.max(...times, t0 + 1);
  const x = (t) => ((t - t0) / (t1 - t0)) * (W - 4) + 2;
  xaxis.innerHTML = `<span>${clock(t0)}</span><span class="unit">event time, UTC</span><span>${clock(Math.max(...times))}</span>`;
  if (pts.length > 0) {
    const vs = pts.map((p) => p[i]), lo = Math.min(...vs), top = Math.max(...vs), hi = Math.max(top, lo + 1e-9);
    const y = (v) => H - 8 - ((v - lo) / (hi - lo)) * (H - 14);
    el("line", { class: "grid", x1: 0, x2: W, y1: y(top), y2: y(top) }, svg);
    el("line", { class: "grid", x1: 0, x2: W, y1: y(lo), y2: y(lo) }, svg);
    el("polyline", { points: pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[i]).toFixed(1)}`).join(" ") }, svg);
    el("title", {}, svg).textContent = `${name}: ${vs[vs.length - 1]} (min ${lo}, max ${top})`;
    yaxis.innerHTML = `<span>${num(top)}</span><span>${num(lo)}</span>`;
    const value = document.createElement("span");
    value.className = "value";
    value.textContent = `${name} ${num(vs[vs.length - 1])}`;
    key.prepend(value);
  }
  for (const m of s.marks) {
    const kind = m.reason === "late" || m.reason === "invalid" ? m.reason : "other";
    el("line", { class: "mark-" + kind, x1: x(m.t), x2: x(m.t), y1: H - 6, y2: H, "stroke-width": 2 }, svg);
  }
  return div;
}

function render(snap) {
  last = snap;
  $("title").textContent = snap.title;
  $("stream").textContent = isoTime(snap.stream);
  let pending = `pending trees ${snap.pending_trees}`;
  if (snap.max_pending) pending += ` of ${snap.max_pending}`;
  const c = snap.checkpoint;
  if (c) {
    pending += c.id
      ? ` · checkpoint ${c.id}, ${Math.round((snap.wall - c.at) / 1000)} s ago, took ${c.duration_ms} ms, ${c.bytes} B` +
        (c.failed ? `, ${c.failed} failed` : "")
      : " · no checkpoint yet";
  }
  $("pending").textContent = pending;
  updateGraph(snap);
  updateReplay(snap);
  updateConnectors(snap);
  updateSensors(snap);
  if (snap.finished) finish(snap);
}

// finish shows the final state of a run that ended: its last figures,
// and what became of what it read, instead of a page frozen mid-run.
function finish(snap) {
  finished = true;
  events.close();
  const first = snap.components.find((c) => c.kind !== "source"), r = snap.replay;
  let text = "finished";
  if (r) {
    // As the command's summary: records read ahead of a replay stopped
    // early were never replayed, and are counted apart.
    const ahead = Math.max(0, r.read - (r.emitted + r.invalid + r.skipped + r.outside));
    text += `: ${r.read - ahead} read, ${r.emitted} replayed`;
    $("read").textContent = r.read - ahead;
    if (first) text += `, ${first.late} late, ${first.invalid + r.invalid} invalid`;
    if (ahead) text += `, ${ahead} read ahead and not replayed`;
  }
  $("conn").className = "conn done";
  $("conn").textContent = text;
  $("buttons").hidden = true;
}

async function post(path) {
  const res = await fetch(path, { method: "POST" });
  if (!res.ok) alert(await res.text());
}

function speedOf(r) { return r.speed === "max" ? Infinity : parseFloat(r.speed); }

$("faster").onclick = () => {
  const s = speedOf(last.replay);
  if (s !== Infinity) post("speed?factor=" + Math.min(s * 2, MAX_SPEED));
};
$("slower").onclick = () => {
  const s = speedOf(last.replay);
  post("speed?factor=" + (s === Infinity ? MAX_SPEED : Math.max(s / 2, MIN_SPEED)));
};
$("pause").onclick = () => post("pause");
$("resume").onclick = () => post("resume");
$("unpaced").onclick = () => post("speed?factor=max");
$("realtime").onclick = () => post("speed?factor=1");
$("field").onchange = () => { chosenByUser = true; if (last) updateSensors(last); };

const events = new EventSource("events");
events.addEventListener("snapshot", (e) => {
  $("conn").className = "conn on";
  $("conn").textContent = "live";
  render(JSON.parse(e.data));
});
events.onerror = () => {
  if (finished) return;
  $("conn").className = "conn off";
  $("conn").textContent = "disconnected";
};
