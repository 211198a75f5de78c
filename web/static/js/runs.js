// Every schedule's runs over a window, filtered: what each figure of the overview counts.
import { api } from "./api.js";
import { $, esc, hashQuery, pager, seconds, setHashQuery, traceLink, when } from "./ui.js";
import { attempts, onRedrive, redriveButton, redriveRangeDialog } from "./http_action.js";

const statuses = ["BUFFERED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELED", "TERMINATED", "SKIPPED", "MISSED"];
const triggers = ["scheduled", "catchup", "manual", "backfill"];
const windows = ["15m", "1h", "6h", "24h", "168h"];
let paging = { key: null, cursors: [], cursor: "", next: "" };

function options(values, current) {
  return [""].concat(values).map(v => '<option value="' + v + '"' + (v === current ? " selected" : "") + ">" + (v || "any") + "</option>").join("");
}

export async function runList() {
  const q = hashQuery();
  // The dead letter: FAILED runs of http and workflow actions, from the whole history unless
  // a window is chosen; no status or lateness filter applies to it.
  const dead = q.get("dead_letter") === "true";
  const f = { window: q.get("window") || (dead ? "" : "1h"), status: q.get("status") || "", trigger: q.get("trigger") || "", late_over: q.get("late_over") || "", dead_letter: dead ? "true" : "" };
  const key = JSON.stringify(f);
  if (paging.key !== key) paging = { key, cursors: [], cursor: "", next: "" };
  const params = new URLSearchParams({ limit: 50 });
  if (f.window) params.set("window", f.window);
  for (const k of dead ? ["trigger", "dead_letter"] : ["status", "trigger", "late_over"]) if (f[k]) params.set(k, f[k]);
  if (paging.cursor) params.set("cursor", paging.cursor);
  const page = await api("GET", "/runs?" + params);
  paging.next = page.next_cursor;
  const what = [f.status || "all", f.trigger ? f.trigger + " " : "", "runs", f.late_over ? "later than " + f.late_over : ""].join(" ").replace(/\s+/g, " ");
  let html = "<h2>Runs <small class=\"muted\" id=\"runs-what\">" + esc(dead ? "the dead letter: FAILED runs of http and workflow actions, not redriven since" + (f.window ? " · ticks of the last " + f.window : "")
    : what + " · ticks of the last " + f.window) + "</small></h2>";
  html += '<form class="toolbar filters" id="runs-filter"><label for="rf-window">Window</label> <select id="rf-window">' +
    (dead ? [""] : []).concat(windows).map(w => '<option value="' + w + '"' + (w === f.window ? " selected" : "") + ">" + (w ? "last " + w : "all time") + "</option>").join("") + "</select>" +
    ' <label for="rf-status">Status</label> <select id="rf-status"' + (dead ? " disabled" : "") + ">" + options(statuses, f.status.split(",").length === 1 ? f.status : "") + "</select>" +
    ' <label for="rf-trigger">Trigger</label> <select id="rf-trigger">' + options(triggers, f.trigger) + "</select>" +
    ' <label for="rf-late">Later than</label> <input id="rf-late" size="6" placeholder="1s" value="' + esc(f.late_over) + '" autocomplete="off"' + (dead ? " disabled" : "") + ">" +
    ' <label class="inline" for="rf-dead"><input type="checkbox" id="rf-dead"' + (dead ? " checked" : "") + "> Dead letter</label>" +
    (dead ? ' <button type="button" id="redrive-range">Redrive a range…</button>' : "") + "</form>" +
    '<p class="form-error error" role="alert" id="runs-result"></p>';
  html += '<div data-region="runs"><table id="all-runs"><thead><tr><th scope="col">Schedule</th><th scope="col">Tick</th><th scope="col">Fired</th><th scope="col">Late</th><th scope="col">Trigger</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Attempts</th></tr></thead><tbody>';
  for (const r of page.items) {
    const late = r.fired_at && (r.trigger === "scheduled" || r.trigger === "catchup") ? (Date.parse(r.fired_at) - Date.parse(r.scheduled_at)) / 1000 : null;
    html += '<tr data-run="' + r.id + '"><td><a href="#schedule/' + encodeURIComponent(r.schedule) + '">' + esc(r.schedule) + "</a></td><td>" + when(r.scheduled_at) +
      "</td><td>" + when(r.fired_at) + "</td><td>" + seconds(late) + "</td><td>" + esc(r.trigger) + '</td><td class="status-' + esc(r.status) + '">' + esc(r.status) + redriveButton(r) +
      '</td><td class="reason">' + esc(r.reason || r.error || "") + traceLink(r.trace_id) + "</td><td>" + attempts(r) + "</td></tr>";
  }
  html += "</tbody></table>" + (page.items.length ? "" : '<p class="muted">No run matches.</p>') + pager("all-runs-page", paging.cursors.length > 0, page.next_cursor) + "</div>";
  return {
    title: "Runs", html, live: true,
    mount(root, ctx) {
      if (!ctx.first) return;
      const opts = { signal: ctx.signal };
      const apply = () => {
        const deadLetter = $("#rf-dead", root).checked;
        // Turning the dead letter on or off starts from its own default window.
        const win = deadLetter === dead ? $("#rf-window", root).value : "";
        setHashQuery({ window: win, status: deadLetter ? "" : $("#rf-status", root).value, trigger: $("#rf-trigger", root).value,
          late_over: deadLetter ? "" : $("#rf-late", root).value.trim(), dead_letter: deadLetter ? "true" : "" });
        ctx.rerender();
      };
      for (const id of ["#rf-window", "#rf-status", "#rf-trigger", "#rf-late", "#rf-dead"]) $(id, root).addEventListener("change", apply, opts);
      $("#runs-filter", root).addEventListener("submit", (ev) => { ev.preventDefault(); apply(); }, opts);
      root.addEventListener("click", async (ev) => {
        const b = ev.target.closest("button");
        if (!b) return;
        if (await onRedrive(ev, (msg) => { $("#runs-result", root).textContent = msg; ctx.rerender(); })) return;
        if (b.id === "redrive-range") { redriveRangeDialog((msg) => { $("#runs-result", root).textContent = msg; ctx.rerender(); }); return; }
        if (b.id === "all-runs-page-next" && paging.next) { paging.cursors.push(paging.cursor); paging.cursor = paging.next; ctx.rerender(); }
        if (b.id === "all-runs-page-prev") { paging.cursor = paging.cursors.pop() || ""; ctx.rerender(); }
      }, opts);
    },
  };
}
