// A schedule's page: its spec and policies in words, upcoming fires, what is waiting, the
// run history as a grid of ticks, lateness over time, and its runs filtered and paged.
import { api } from "./api.js";
import { $, esc, hashQuery, num, pager, relative, seconds, setHashQuery, temporalLink, traceLink, when } from "./ui.js";
import { timeSeries } from "./charts.js";
import { stateLabel, timing } from "./schedules.js";
import { backfillDialog, deleteDialog, labelText, pauseDialog, rescheduleDialog, triggerDialog } from "./schedule_actions.js";
import { attempts, onRedrive, redriveButton, retryText, rotateDialog } from "./http_action.js";

const GRID_TICKS = 240;
const RUNS_PAGE = 25;
const statuses = ["BUFFERED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELED", "TERMINATED", "SKIPPED", "MISSED"];
const triggers = ["scheduled", "catchup", "manual", "backfill"];
const windows = ["15m", "1h", "6h", "24h", "168h"];

// described caches each schedule version's description (the preview endpoint's words).
const described = new Map();
let runPaging = { key: null, cursors: [], cursor: "", next: "" };
// latest is the schedule as last read: the commands act on what the page shows now.
let latest = null;

function lateness(r) {
  if (!r.fired_at || (r.trigger !== "scheduled" && r.trigger !== "catchup")) return null;
  return (Date.parse(r.fired_at) - Date.parse(r.scheduled_at)) / 1000;
}

function runTitle(r) {
  const l = lateness(r);
  return r.scheduled_at.replace("T", " ").replace(/\.\d+Z$/, "Z") + " · " + r.trigger + " · " + r.status +
    (l !== null ? " · late " + seconds(l) : "") + (r.reason ? " · " + r.reason : "") + (r.error ? " · " + r.error : "");
}

// grid draws one cell per tick, oldest first, coloured by status; hovering a cell (or
// reading its label) tells when, how, how late and why.
function grid(runs) {
  const ticks = runs.slice().sort((a, b) => Date.parse(a.scheduled_at) - Date.parse(b.scheduled_at) || a.id - b.id);
  if (!ticks.length) return '<p class="muted" id="grid-empty">No tick recorded yet.</p>';
  const counts = {};
  for (const r of ticks) counts[r.status] = (counts[r.status] || 0) + 1;
  let html = '<div class="tick-grid" id="tick-grid" role="list" aria-label="' + esc("the last " + ticks.length + " ticks: " +
    Object.entries(counts).map(([k, v]) => v + " " + k).join(", ")) + '">';
  for (const r of ticks) {
    html += '<span role="listitem" class="tick status-' + esc(r.status) + '" data-run="' + r.id + '" title="' + esc(runTitle(r)) + '" aria-label="' + esc(runTitle(r)) + '"></span>';
  }
  html += '</div><div class="legend">' + statuses.filter(s => counts[s]).map(s => '<span><span class="tick status-' + s + '"></span> ' + s + " " + counts[s] + "</span>").join("") + "</div>";
  return html;
}

function waiting(s) {
  const w = s.waiting;
  if (!w) return '<p class="muted" id="waiting">Nothing reported as waiting.</p>';
  let html = '<p id="waiting"><strong>' + num(w.buffered || 0) + "</strong> buffered tick" + (w.buffered === 1 ? "" : "s") +
    ", <strong>" + num(w.backfill || 0) + "</strong> backfill tick" + (w.backfill === 1 ? "" : "s") + " waiting to run." +
    (s.paused && (w.buffered || 0) > 0 ? " Buffered ticks start after resume." : "") + "</p>";
  if ((w.buffered_ticks || []).length) {
    html += '<details><summary>Buffered ticks</summary><ul class="compact">' + w.buffered_ticks.map(t => "<li>" + when(t.scheduled_at) + " · " + esc(t.trigger) + (t.reason ? ' · <span class="muted">' + esc(t.reason) + "</span>" : "") + "</li>").join("") + "</ul></details>";
  }
  if ((w.backfills || []).length) {
    html += '<table class="compact"><thead><tr><th scope="col">Backfill from</th><th scope="col">to</th><th scope="col">Remaining</th></tr></thead><tbody>' +
      w.backfills.map(b => "<tr><td>" + when(b.start) + "</td><td>" + when(b.end) + "</td><td>" + num(b.remaining) + "</td></tr>").join("") + "</tbody></table>";
  }
  return html;
}

// historyList shows who paused, resumed or edited the schedule, when and why, newest first.
function historyList(entries) {
  if (!entries.length) return '<p class="muted" id="history-empty">Not paused, resumed or edited since it was created.</p>';
  const change = (c) => esc(c.field) + ": <code>" + esc(JSON.stringify(c.from)) + "</code> → <code>" + esc(JSON.stringify(c.to)) + "</code>";
  return '<table id="history" class="compact"><thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Who</th><th scope="col">How</th><th scope="col">Why / what changed</th></tr></thead><tbody>' +
    entries.map(h => '<tr data-history="' + h.id + '"><td>' + when(h.at) + "</td><td>" + esc(h.kind) + "</td><td>" + esc(h.by) + "</td><td>" + esc(h.door) + "</td><td>" +
      esc(h.note) + (h.changes.length ? (h.note ? "<br>" : "") + h.changes.map(change).join("<br>") : "") + "</td></tr>").join("") + "</tbody></table>";
}

// pausedBanner says, on a paused schedule, why: the pause it made itself (its http action's
// auto_pause rule met) with its reason, or the note of whoever paused it. Resume clears it.
function pausedBanner(s) {
  if (!s.paused) return "";
  if (s.auto_paused) {
    return '<p class="banner banner-warning" id="paused-banner" role="status"><strong>Paused itself</strong> ' + when(s.auto_paused.at) +
      ': <span id="auto-pause-reason">' + esc(s.auto_paused.reason) + "</span>. Fix the endpoint, then resume it (and redrive the dead letter).</p>";
  }
  return '<p class="banner" id="paused-banner" role="status"><strong>Paused</strong>' + (s.note ? ": " + esc(s.note) : "") + "</p>";
}

function actionText(a) {
  if (!a) return "";
  if (a.kind === "workflow") return "start workflow <code>" + esc(a.workflow_type) + "</code> on task queue <code>" + esc(a.task_queue) + "</code>";
  if (a.kind === "http") {
    const l = a.limits, p = a.auto_pause;
    return "send a signed <code>" + esc(a.method) + "</code> to <code>" + esc(a.url) + "</code> (timeout " + esc(a.timeout) + ")" +
      (l ? '<br><span id="host-limits">host limits: ' + [l.max_in_flight ? l.max_in_flight + " in flight" : "", l.per_minute ? l.per_minute + " a minute" : ""].filter(Boolean).join(", ") + "</span>" : "") +
      (p ? '<br><span id="auto-pause">pauses itself after ' + [p.after_failures ? p.after_failures + " failed runs in a row" : "", p.or_after ? esc(p.or_after) + " of failures" : ""].filter(Boolean).join(" or ") + "</span>" : "");
  }
  return "append event <code>" + esc(a.type) + "</code> to topic <code>" + esc(a.topic) + "</code>";
}

export async function schedulePage(name) {
  const q = hashQuery();
  const win = q.get("window") || "1h";
  const status = q.get("status") || "";
  const trigger = q.get("trigger") || "";
  const runKey = name + "|" + status + "|" + trigger;
  if (runPaging.key !== runKey) runPaging = { key: runKey, cursors: [], cursor: "", next: "" };
  const enc = encodeURIComponent(name);
  const runParams = new URLSearchParams({ limit: RUNS_PAGE });
  if (status) runParams.set("status", status);
  if (trigger) runParams.set("trigger", trigger);
  if (runPaging.cursor) runParams.set("cursor", runPaging.cursor);
  const [s, recent, stats, runs, hist] = await Promise.all([
    api("GET", "/schedules/" + enc),
    api("GET", "/schedules/" + enc + "/runs?limit=" + GRID_TICKS),
    api("GET", "/schedules/" + enc + "/stats?window=" + encodeURIComponent(win)),
    api("GET", "/schedules/" + enc + "/runs?" + runParams),
    api("GET", "/schedules/" + enc + "/history?limit=20"),
  ]);
  runPaging.next = runs.next_cursor;
  const dKey = name + "@" + s.version;
  if (!described.has(dKey)) {
    try {
      const p = await api("POST", "/schedules/preview", { name: s.name, spec: s.spec, action: s.action, policies: s.policies });
      described.set(dKey, p.description);
    } catch (e) {
      described.set(dKey, "");
    }
  }
  const pol = s.policies || {};
  const state = stateLabel(s);
  latest = s;
  let html = '<div data-region="head"><h2><a href="#schedules">Schedules</a> / ' + esc(name) + ' <span id="schedule-state" class="badge state-' + state.toLowerCase() + '">' + state + "</span>" + temporalLink(s.workflow_id) + "</h2></div>";
  // The commands are a region of their own: a refresh that changed the heading (the state, the
  // workflow's link) or the banner leaves the button under the user's pointer in place.
  html += '<div data-region="commands"><div class="toolbar" role="toolbar" aria-label="commands"><a class="button" id="edit" href="#schedule/' + enc + '/edit">Edit</a>' +
    (s.paused ? '<button type="button" id="resume">Resume</button>' : '<button type="button" id="pause">Pause</button>') +
    '<button type="button" id="trigger">Trigger…</button><button type="button" id="backfill">Backfill…</button>' +
    '<button type="button" id="reschedule"' + (s.paused ? " disabled title=\"resume it first\"" : "") + ">Reschedule…</button>" +
    (s.action && s.action.kind === "http" ? '<button type="button" id="rotate-secret">Rotate secret…</button>' : "") +
    '<button type="button" id="delete" class="danger">Delete…</button></div></div>';
  html += '<div data-region="banner">' + pausedBanner(s) + "</div>";
  html += '<p class="form-error error" role="alert" id="command-result"></p>';
  html += '<div class="columns"><section class="panel" data-region="spec"><h3>Spec and policies</h3><dl class="facts">' +
    "<dt>When</dt><dd id=\"description\">" + esc(described.get(dKey) || "") + (s.spec && s.spec.cron ? "<br>" + timing(s.spec) : "") + "</dd>" +
    "<dt>Action</dt><dd>" + actionText(s.action) + "</dd>" +
    (s.action && s.action.kind !== "event" ? '<dt>Retry</dt><dd id="retry">' + retryText(s.retry) + "</dd>" : "") +
    "<dt>Overlap</dt><dd>" + esc(pol.overlap) + "</dd>" +
    (pol.max_concurrent ? '<dt>Max concurrent</dt><dd id="max-concurrent">' + pol.max_concurrent + " runs at once; a tick beyond " +
      (pol.overlap_when_full === "skip" ? "is skipped" : "waits") + "</dd>" : "") +
    "<dt>Catch-up window</dt><dd>" + esc(pol.catchup_window) + "</dd>" +
    "<dt>Skip if successful</dt><dd>" + (pol.skip_if_successful ? "yes" : "no") + "</dd>" +
    (s.spec && s.spec.jitter && s.spec.jitter !== "0s" ? "<dt>Jitter</dt><dd>" + esc(s.spec.jitter) + "</dd>" : "") +
    ((s.spec && s.spec.exclude_calendars || []).length ? '<dt>Excludes</dt><dd id="exclude-calendars">' +
      s.spec.exclude_calendars.map(c => '<a href="#calendar/' + encodeURIComponent(c) + '">' + esc(c) + "</a>").join(", ") + "</dd>" : "") +
    (s.after_completion ? '<dt>Once its run ended</dt><dd id="after-completion">' + (s.after_completion === "delete" ? "deleted" : "kept, completed") +
      (s.completed_at ? " · completed " + when(s.completed_at) : "") + "</dd>" : "") +
    (s.paused ? '<dt>Paused</dt><dd id="pause-note">' + esc(s.note || "(no note)") + "</dd>" : "") +
    '<dt>Labels</dt><dd id="labels">' + labelText(s.labels) + "</dd>" +
    "<dt>Prometheus series</dt><dd>" + (s.metrics ? "yes" : "no") + "</dd>" +
    "<dt>Counters</dt><dd>fired " + num(s.counters.fired) + ", skipped " + num(s.counters.skipped) + ", missed " + num(s.counters.missed) + "</dd>" +
    "<dt>Version</dt><dd>" + s.version + "</dd></dl></section>";
  html += '<section class="panel" data-region="upcoming"><h3>Upcoming fires</h3>';
  if ((s.next_fire_times || []).length) {
    const now = Date.now();
    html += '<ol id="upcoming" class="compact">' + s.next_fire_times.map(t => "<li>" + when(t) + ' <span class="muted">' + relative(t, now) + "</span></li>").join("") + "</ol>";
  } else {
    html += '<p class="muted" id="upcoming">' + (s.paused ? "None while paused." : s.completed_at ? "None: completed, its run ended." : "No more fires (the spec has ended).") + "</p>";
  }
  html += '</section><section class="panel" data-region="waiting"><h3>What is waiting</h3>' + waiting(s) +
    ((s.running_runs || []).length ? "<p>Running now: " + s.running_runs.map(r => "run " + r.id + " (" + esc(r.trigger) + ", tick " + when(r.scheduled_at) + ")").join(", ") + "</p>" : "") +
    "</section></div>";
  html += '<section class="panel"><h3 id="history-title">Pauses, resumes and edits</h3><div data-region="history">' + historyList(hist.items) + "</div></section>";
  html += '<section class="panel"><h3>Run history</h3><p class="muted">One cell per tick, oldest first (the latest ' + GRID_TICKS + '); hover a cell for its reason.</p><div data-region="grid">' + grid(recent.items) + "</div></section>";
  const t = stats.totals;
  html += '<section class="panel"><h3>Lateness</h3><form class="toolbar"><label for="stats-window">Window</label> <select id="stats-window">' +
    windows.map(w => '<option value="' + w + '"' + (w === win ? " selected" : "") + ">last " + w + "</option>").join("") + "</select></form>" +
    '<p data-region="stats" id="stats-summary">' + num(t.ticks) + " ticks: " + num(t.fired) + " fired, " + num(t.late) + " late &gt; " + esc(stats.late_after) + ", " + num(t.missed) + " missed, " +
    num(t.skipped) + " skipped, " + num(t.failed) + " failed · lateness p50 " + seconds(t.lateness.p50_seconds) + ", p99 " + seconds(t.lateness.p99_seconds) +
    ", max " + seconds(t.lateness.max_seconds) + "</p>" + '<div data-chart id="chart-lateness"></div></section>';
  html += '<section class="panel"><h3 id="runs-title">Runs</h3><form class="toolbar filters" id="run-filter"><label for="r-status">Status</label> <select id="r-status">' +
    [""].concat(statuses).map(v => '<option value="' + v + '"' + (v === status ? " selected" : "") + ">" + (v || "any") + "</option>").join("") +
    '</select> <label for="r-trigger">Trigger</label> <select id="r-trigger">' +
    [""].concat(triggers).map(v => '<option value="' + v + '"' + (v === trigger ? " selected" : "") + ">" + (v || "any") + "</option>").join("") + "</select></form>";
  html += '<div data-region="runs"><table id="runs" aria-labelledby="runs-title"><thead><tr><th scope="col">ID</th><th scope="col">Tick</th><th scope="col">Fired</th><th scope="col">Late</th><th scope="col">Trigger</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Attempts</th></tr></thead><tbody>';
  for (const r of runs.items) {
    html += '<tr data-run="' + r.id + '"><td>' + r.id + "</td><td>" + when(r.scheduled_at) + "</td><td>" + when(r.fired_at) + "</td><td>" + seconds(lateness(r)) +
      "</td><td>" + esc(r.trigger) + '</td><td class="status-' + esc(r.status) + '">' + esc(r.status) + redriveButton(r) + '</td><td class="reason">' + esc(r.reason || r.error || "") + traceLink(r.trace_id) +
      "</td><td>" + attempts(r) + "</td></tr>";
  }
  html += "</tbody></table>" + (runs.items.length ? "" : '<p class="muted">No run matches.</p>') + pager("runs-page", runPaging.cursors.length > 0, runs.next_cursor) + "</div></section>";

  return {
    title: name, html, live: true,
    mount(root, ctx) {
      const x = stats.series.map(b => Date.parse(b.t) / 1000);
      timeSeries($("#chart-lateness", root), x, [
        { label: "p50", values: stats.series.map(b => b.lateness.p50_seconds), kind: "line", color: "p50" },
        { label: "p99", values: stats.series.map(b => b.lateness.p99_seconds), kind: "line", color: "p99" },
      ], { label: "lateness of " + name + ": p50 " + seconds(t.lateness.p50_seconds) + ", p99 " + seconds(t.lateness.p99_seconds), yLabel: "lateness", yFormat: seconds, minY: 0.01 });
      if (!ctx.first) return;
      const opts = { signal: ctx.signal };
      const done = (msg) => { $("#command-result", root).textContent = msg || ""; ctx.rerender(); };
      const filter = () => {
        setHashQuery({ window: $("#stats-window", root).value === "1h" ? "" : $("#stats-window", root).value, status: $("#r-status", root).value, trigger: $("#r-trigger", root).value });
        ctx.rerender();
      };
      for (const id of ["#stats-window", "#r-status", "#r-trigger"]) $(id, root).addEventListener("change", filter, opts);
      root.addEventListener("click", async (ev) => {
        const b = ev.target.closest("button");
        if (!b) return;
        if (await onRedrive(ev, done)) return;
        switch (b.id) {
          case "rotate-secret": rotateDialog(name, () => done("Signing secret rotated.")); break;
          case "pause": pauseDialog(name, () => done("Paused.")); break;
          case "resume":
            try { await api("POST", "/schedules/" + enc + "/resume", {}); done("Resumed."); } catch (e) { $("#command-result", root).textContent = (e.field ? e.field + ": " : "") + e.message; }
            break;
          case "trigger": triggerDialog(name, latest.action, (res) => done("Triggered: " + res.status + (res.reason ? " (" + res.reason + ")" : ""))); break;
          case "backfill": backfillDialog(name, (res) => done("Backfill accepted: " + res.ticks + " tick" + (res.ticks === 1 ? "" : "s") + " to run.")); break;
          case "reschedule": rescheduleDialog(name, latest.next_run_at, () => done("Rescheduled.")); break;
          case "delete": deleteDialog(name, () => { location.hash = "#schedules"; }); break;
          case "runs-page-next":
            if (runPaging.next) { runPaging.cursors.push(runPaging.cursor); runPaging.cursor = runPaging.next; ctx.rerender(); }
            break;
          case "runs-page-prev": runPaging.cursor = runPaging.cursors.pop() || ""; ctx.rerender(); break;
        }
      }, opts);
    },
  };
}
