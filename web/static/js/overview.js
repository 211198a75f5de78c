// The landing page: the last window's fires, lateness and problems, rollouts in flight and
// the active device task, each figure a link to what it counts.
import { api } from "./api.js";
import { $, bar, esc, num, seconds, hashQuery } from "./ui.js";
import { timeSeries } from "./charts.js";

const windows = [["15m", "15 minutes"], ["1h", "hour"], ["6h", "6 hours"], ["24h", "24 hours"]];

function card(id, href, label, value, note, tone) {
  return '<a class="card' + (tone ? " tone-" + tone : "") + '" id="' + id + '" href="' + esc(href) + '"><span class="card-label">' + esc(label) +
    '</span><span class="card-value">' + value + "</span>" + (note ? '<span class="card-note">' + note + "</span>" : "") + "</a>";
}

export async function overview() {
  const win = hashQuery().get("window") || "1h";
  const o = await api("GET", "/stats/overview?window=" + encodeURIComponent(win));
  const t = o.totals;
  const w = "window=" + encodeURIComponent(win);
  const label = (windows.find(x => x[0] === win) || [win, win])[1];
  let html = '<h2>Overview</h2><form class="toolbar" id="window-form"><label for="window">Window</label> <select id="window">' +
    windows.map(([v, l]) => '<option value="' + v + '"' + (v === win ? " selected" : "") + ">last " + esc(l) + "</option>").join("") + "</select></form>";
  html += '<section aria-label="figures" class="cards" data-region="cards">' +
    card("c-fired", "#runs?" + w, "Fires, last " + label, num(t.fired), "of " + num(t.ticks) + " ticks recorded") +
    card("c-late", "#runs?late_over=" + encodeURIComponent(o.late_after) + "&" + w, "Late > " + o.late_after.replace("0s", "s").replace("1s", "1 s"), num(t.late),
      "p50 " + seconds(t.lateness.p50_seconds) + " · p99 " + seconds(t.lateness.p99_seconds), t.late ? "warn" : "") +
    card("c-missed", "#runs?status=MISSED&" + w, "Missed", num(t.missed), "", t.missed ? "bad" : "") +
    card("c-skipped", "#runs?status=SKIPPED&" + w, "Skipped", num(t.skipped), "", t.skipped ? "warn" : "") +
    card("c-failed", "#runs?status=FAILED&" + w, "Failed", num(t.failed), "", t.failed ? "bad" : "") +
    card("c-rollouts", "#rollouts?status=RUNNING,PAUSED", "Rollouts in flight", num(o.rollouts.count),
      o.rollouts.items.map(r => esc(r.name)).slice(0, 3).join(", ")) +
    card("c-schedules", "#schedules", "Schedules", num(o.schedules.total),
      '<span class="state-active">' + num(o.schedules.active) + " active</span> · " + '<span class="state-paused">' + num(o.schedules.paused) + " paused</span>" +
      (o.schedules.completed ? ' · <span class="state-completed">' + num(o.schedules.completed) + " completed</span>" : "")) +
    "</section>";
  html += '<section class="panel"><h3 id="fires-title">Fires per ' + esc(o.bucket.replace(/0s$/, "").replace(/m$/, " min").replace(/^1 min$/, "minute")) +
    "</h3><div data-chart id=\"chart-fires\"></div></section>";
  html += '<section class="panel"><h3>Lateness (p50 and p99 per bucket)</h3><div data-chart id="chart-lateness"></div></section>';
  html += '<section class="panel" data-region="device-task"><h3>Active device task</h3>';
  const dt = o.device_task;
  if (dt) {
    const c = dt.counts || {};
    html += '<p><a id="active-task" href="#task/' + dt.id + '">Task #' + dt.id + "</a> <code>" + esc(JSON.stringify(dt.payload)) + "</code></p>" +
      bar({ succeeded: c.succeeded, active: c.active, failed: c.failed, canceled: c.canceled }, ["succeeded", "active", "failed", "canceled"], "executions");
  } else {
    html += '<p class="muted">No device task is active. <a href="#tasks">Device tasks</a></p>';
  }
  html += '</section><section class="panel" data-region="rollouts"><h3>Rollouts in flight</h3>';
  if (o.rollouts.items.length) {
    html += "<ul>" + o.rollouts.items.map(r => '<li><a href="#rollout/' + r.id + '">' + esc(r.name) + "</a> " +
      bar(r.counts || {}, ["DONE", "RUNNING", "AVAILABLE", "PENDING", "FAILED", "CANCELED", "SKIPPED"], r.name) + "</li>").join("") + "</ul>";
  } else {
    html += '<p class="muted">None.</p>';
  }
  html += "</section>";
  return {
    // A long window's statistics cost more and change slower: refresh them less often.
    title: "Overview", html, live: { "15m": 3000, "1h": 3000, "6h": 10000, "24h": 30000 }[win] || 3000,
    mount(root, ctx) {
      const x = o.series.map(b => Date.parse(b.t) / 1000);
      timeSeries($("#chart-fires", root), x, [
        { label: "fired", values: o.series.map(b => b.fired), kind: "bars", color: "fired" },
        { label: "late", values: o.series.map(b => b.late), kind: "line", color: "late" },
        { label: "missed", values: o.series.map(b => b.missed), kind: "line", color: "missed" },
        { label: "skipped", values: o.series.map(b => b.skipped), kind: "line", color: "skipped" },
        { label: "failed", values: o.series.map(b => b.failed), kind: "line", color: "failed" },
      ], { label: "fires per bucket over the last " + label + ": " + t.fired + " fired, " + t.missed + " missed, " + t.skipped + " skipped, " + t.failed + " failed", yLabel: "runs" });
      timeSeries($("#chart-lateness", root), x, [
        { label: "p50", values: o.series.map(b => b.lateness.p50_seconds), kind: "line", color: "p50" },
        { label: "p99", values: o.series.map(b => b.lateness.p99_seconds), kind: "line", color: "p99" },
      ], { label: "fire lateness p50 " + seconds(t.lateness.p50_seconds) + ", p99 " + seconds(t.lateness.p99_seconds), yLabel: "lateness", yFormat: seconds, minY: 0.01 });
      if (ctx.first) {
        $("#window", root).addEventListener("change", (ev) => { location.hash = "#overview?window=" + ev.target.value; }, { signal: ctx.signal });
      }
    },
  };
}
