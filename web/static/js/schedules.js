// The schedules list: filtered by state and name on the server, paged with its cursor, with
// each schedule's quick actions.
import { api } from "./api.js";
import { $, esc, hashQuery, num, pager, setHashQuery, when } from "./ui.js";
import { bulkDialog, labelText, pauseDialog, triggerDialog } from "./schedule_actions.js";

const PAGE = 50;
// paging holds, for the filter shown, the cursors of the pages before this one, this page's
// and the next one's (from the latest answer, so a live refresh keeps it current).
let paging = { filter: null, cursors: [], cursor: "" };

export function timing(spec) {
  if (!spec) return "";
  const except = (spec.exclude_calendars || []).length ? ' <span class="muted">except ' + spec.exclude_calendars.map(esc).join(", ") + "</span>" : "";
  if (spec.at) return "once at " + when(spec.at) + except;
  if (spec.cron) return "<code>" + esc(spec.cron) + "</code> " + esc(spec.timezone || "UTC") + except;
  const iv = spec.interval;
  if (iv && typeof iv === "object") {
    const secs = iv.every * ({ SECONDS: 1, MINUTES: 60, HOURS: 3600, DAYS: 86400 }[iv.unit] || 1);
    for (const [n, unit] of [[86400, "day"], [3600, "hour"], [60, "minute"], [1, "second"]]) {
      if (secs >= n && secs % n === 0) return "every " + (secs === n ? unit : secs / n + " " + unit + "s") + except;
    }
  }
  return "every " + esc(iv);
}

function waitingCount(s) {
  const w = s.waiting;
  if (!w) return '<span class="muted">–</span>';
  const n = (w.buffered || 0) + (w.backfill || 0);
  if (!n) return "0";
  return '<span title="' + esc(w.buffered + " buffered, " + w.backfill + " backfill") + '">' + num(n) + "</span>";
}

// stateLabel is a schedule's state as the API says it: active, paused, or completed (a
// one-time schedule whose run has ended).
export function stateLabel(s) {
  const st = s.state || (s.paused ? "paused" : "active");
  return st.charAt(0).toUpperCase() + st.slice(1);
}

export async function scheduleList() {
  const q = hashQuery();
  const state = q.get("state") || "";
  const name = q.get("name") || "";
  const selector = q.get("selector") || "";
  const filter = state + "|" + name + "|" + selector;
  if (paging.filter !== filter) paging = { filter, cursors: [], cursor: "" };
  const params = new URLSearchParams({ limit: PAGE });
  if (state) params.set("state", state);
  if (name) params.set("name", name);
  if (selector) params.set("selector", selector);
  if (paging.cursor) params.set("cursor", paging.cursor);
  // A selector the API refuses is shown beside its input, with an empty list.
  let page;
  let selectorError = "";
  try {
    page = await api("GET", "/schedules?" + params);
  } catch (e) {
    if (e.field !== "selector") throw e;
    selectorError = e.message;
    page = { items: [], next_cursor: "" };
  }
  paging.next = page.next_cursor;

  let html = '<h2>Schedules</h2><div class="toolbar"><a class="button primary" href="#schedules/new" id="new-schedule">New schedule</a>' +
    '<form id="schedule-filter" role="search" class="filters"><label for="f-state">State</label> <select id="f-state">' +
    [["", "any"], ["active", "active"], ["paused", "paused"], ["completed", "completed"]].map(([v, l]) => '<option value="' + v + '"' + (v === state ? " selected" : "") + ">" + l + "</option>").join("") +
    '</select> <label for="f-name">Name contains</label> <input id="f-name" type="search" value="' + esc(name) + '" autocomplete="off" maxlength="128">' +
    ' <label for="f-selector">Labels</label> <input id="f-selector" type="search" value="' + esc(selector) + '" autocomplete="off" maxlength="4096" placeholder="team=billing,tier!=gold" aria-describedby="f-selector-error"' + (selectorError ? ' aria-invalid="true"' : "") + ">" +
    '<small class="field-error error" id="f-selector-error" aria-live="polite">' + esc(selectorError) + "</small></form>" +
    (selector && !selectorError ? '<button type="button" id="bulk-pause">Pause matching…</button><button type="button" id="bulk-resume">Resume matching…</button>' : "") + "</div>" +
    '<p class="muted" id="bulk-result" role="status"></p>';
  html += '<div data-region="list"><table id="schedules"><caption class="visually-hidden">Schedules, page ' + (paging.cursors.length + 1) + "</caption>" +
    '<thead><tr><th scope="col">Name</th><th scope="col">State</th><th scope="col">Timing</th><th scope="col">Next fire</th><th scope="col">Last run</th><th scope="col">Waiting</th><th scope="col">Labels</th><th scope="col">Actions</th></tr></thead><tbody>';
  for (const s of page.items) {
    const st = stateLabel(s);
    html += '<tr data-schedule="' + esc(s.name) + '"><td><a href="#schedule/' + encodeURIComponent(s.name) + '">' + esc(s.name) + "</a></td>" +
      '<td class="state state-' + st.toLowerCase() + '">' + st + (s.note ? ' <span class="muted">(' + esc(s.note) + ")</span>" : "") + "</td>" +
      "<td>" + timing(s.spec) + "</td><td>" + when(s.next_run_at) + "</td><td>" + when(s.last_run_at) + "</td><td>" + waitingCount(s) + '</td><td class="labels">' + labelText(s.labels) + "</td><td>" +
      (s.paused ? '<button type="button" class="resume" data-name="' + esc(s.name) + '">Resume</button>'
        : '<button type="button" class="pause" data-name="' + esc(s.name) + '">Pause</button>') +
      '<button type="button" class="trigger" data-name="' + esc(s.name) + '">Trigger</button></td></tr>';
  }
  html += "</tbody></table>";
  if (!page.items.length) html += '<p class="muted" id="no-schedules">' + (name || state || selector ? "No schedule matches." : "No schedules yet.") + "</p>";
  html += pager("schedules-page", paging.cursors.length > 0, page.next_cursor) + '<p class="muted" id="page-number">Page ' + (paging.cursors.length + 1) + "</p></div>";

  return {
    title: "Schedules", html, live: true,
    mount(root, ctx) {
      if (!ctx.first) return;
      const opts = { signal: ctx.signal };
      let typing = null;
      const apply = () => {
        setHashQuery({ state: $("#f-state", root).value, name: $("#f-name", root).value.trim(), selector: $("#f-selector", root).value.trim() });
        ctx.rerender();
      };
      $("#f-state", root).addEventListener("change", apply, opts);
      $("#f-name", root).addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(apply, 300); }, opts);
      $("#f-selector", root).addEventListener("change", apply, opts);
      $("#schedule-filter", root).addEventListener("submit", (ev) => { ev.preventDefault(); clearTimeout(typing); apply(); }, opts);
      root.addEventListener("click", async (ev) => {
        const b = ev.target.closest("button");
        if (!b) return;
        if (b.id === "schedules-page-next") {
          if (!paging.next) return;
          paging.cursors.push(paging.cursor);
          paging.cursor = paging.next;
          ctx.rerender();
        } else if (b.id === "schedules-page-prev") {
          paging.cursor = paging.cursors.pop() || "";
          ctx.rerender();
        } else if (b.classList.contains("pause")) {
          pauseDialog(b.dataset.name, ctx.rerender);
        } else if (b.classList.contains("resume")) {
          b.disabled = true;
          try { await api("POST", "/schedules/" + encodeURIComponent(b.dataset.name) + "/resume", {}); } catch (e) { $("#error").textContent = e.message; }
          ctx.rerender();
        } else if (b.classList.contains("trigger")) {
          triggerDialog(b.dataset.name, null, ctx.rerender);
        } else if (b.id === "bulk-pause" || b.id === "bulk-resume") {
          const pause = b.id === "bulk-pause";
          bulkDialog(pause, selector, (res) => {
            ctx.rerender();
            const done = res.items.map(it => it.name + " " + it.outcome.replace("_", " ")).join(", ");
            $("#bulk-result").textContent = res.changed + " " + (pause ? "paused" : "resumed") + ", " + res.unchanged + " unchanged" + (done ? ": " + done : "") + ".";
          });
        }
      }, opts);
    },
  };
}
