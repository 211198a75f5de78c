// Rollouts: the list by derived status, and a rollout's timeline — one lane per database, a
// block per task from its start to its end, PENDING tasks waiting at the lane's end with
// their cause — so the version order and the one-DDL-at-a-time rule are seen at work.
import { api } from "./api.js";
import { $, bar, dialog, esc, hashQuery, num, pager, seconds, setHashQuery, temporalLink, waitingCause, when } from "./ui.js";

const order = ["DONE", "RUNNING", "AVAILABLE", "PENDING", "FAILED", "CANCELED", "SKIPPED"];
const derived = ["RUNNING", "PAUSED", "DONE", "FAILED", "CANCELED"];
let paging = { key: null, cursors: [], cursor: "", next: "" };

function rolloutStatus(r) {
  return '<span class="rollout-status badge status-' + esc(r.status) + '">' + esc(r.status) + "</span>";
}

export async function rolloutList() {
  const status = hashQuery().get("status") || "";
  if (paging.key !== status) paging = { key: status, cursors: [], cursor: "", next: "" };
  const params = new URLSearchParams({ limit: 50 });
  if (status) params.set("status", status);
  if (paging.cursor) params.set("cursor", paging.cursor);
  const page = await api("GET", "/rollouts?" + params);
  paging.next = page.next_cursor;
  const choices = [["", "any"], ["RUNNING,PAUSED", "in flight"]].concat(derived.map(d => [d, d]));
  let html = '<h2>Rollouts</h2><form class="toolbar filters"><label for="ro-status">Status</label> <select id="ro-status">' +
    choices.map(([v, l]) => '<option value="' + v + '"' + (v === status ? " selected" : "") + ">" + l + "</option>").join("") + "</select></form>";
  html += '<div data-region="list"><table id="rollouts"><thead><tr><th scope="col">ID</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Parallel</th><th scope="col">Created</th></tr></thead><tbody>';
  for (const r of page.items) {
    html += '<tr data-rollout="' + r.id + '"><td><a href="#rollout/' + r.id + '">' + r.id + "</a></td><td>" + esc(r.name) + "</td><td>" + rolloutStatus(r) +
      "</td><td>" + bar(r.counts || {}, order, r.name) + " " + num(r.progress.finished) + "/" + num(r.progress.total) +
      "</td><td>" + r.parallel_limit + "</td><td>" + when(r.created_at) + "</td></tr>";
  }
  html += "</tbody></table>" + (page.items.length ? "" : '<p class="muted">No rollout matches.</p>') + pager("rollouts-page", paging.cursors.length > 0, page.next_cursor) + "</div>";
  return {
    title: "Rollouts", html, live: true,
    mount(root, ctx) {
      if (!ctx.first) return;
      $("#ro-status", root).addEventListener("change", (ev) => { setHashQuery({ status: ev.target.value }); ctx.rerender(); }, { signal: ctx.signal });
      root.addEventListener("click", (ev) => {
        const b = ev.target.closest("button");
        if (b && b.id === "rollouts-page-next" && paging.next) { paging.cursors.push(paging.cursor); paging.cursor = paging.next; ctx.rerender(); }
        if (b && b.id === "rollouts-page-prev") { paging.cursor = paging.cursors.pop() || ""; ctx.rerender(); }
      }, { signal: ctx.signal });
    },
  };
}

// timeline lays each database's tasks on a shared time axis (positions in percent, applied
// through the CSSOM by sizeBars).
function timeline(tasks, now) {
  const started = tasks.filter(t => t.started_at);
  const t0 = Math.min(...tasks.map(t => Date.parse(t.started_at || t.created_at)));
  // The axis ends now while a task runs or waits, and at the last finish once all are done.
  const live = tasks.some(t => !t.finished_at);
  const t1 = Math.max(live ? now : 0, ...started.map(t => Date.parse(t.finished_at || t.started_at)));
  const span = Math.max(1, t1 - t0);
  const lanes = new Map();
  for (const t of tasks) {
    if (!lanes.has(t.database)) lanes.set(t.database, []);
    lanes.get(t.database).push(t);
  }
  let html = '<div class="timeline" id="timeline" role="list" aria-label="task runs per database over time">' +
    '<div class="tl-axis" aria-hidden="true"><span>' + when(new Date(t0).toISOString()) + "</span><span>" + when(new Date(t1).toISOString()) + "</span></div>";
  for (const [db, list] of [...lanes.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    html += '<div class="lane" role="listitem" data-lane="' + esc(db) + '"><div class="lane-label">' + esc(db) + '</div><div class="lane-track">';
    for (const t of list.filter(t => t.started_at)) {
      const start = Date.parse(t.started_at);
      const end = t.finished_at ? Date.parse(t.finished_at) : now;
      const label = t.type + " " + t.version + " · " + t.status + " · " + seconds((end - start) / 1000) + (t.error ? " · " + t.error : "");
      html += '<button type="button" class="tl-task status-' + esc(t.status) + '" data-task-run="' + t.id + '" data-left="' + (100 * (start - t0) / span).toFixed(3) +
        '" data-width="' + Math.max(0.8, 100 * (end - start) / span).toFixed(3) + '" title="' + esc(label) + '" aria-label="' + esc(label) + '">' + esc(t.version) + "</button>";
    }
    html += '</div><div class="lane-waiting">';
    for (const t of list.filter(t => !t.started_at)) {
      const cause = t.status === "PENDING" && t.waiting_cause ? " — " + waitingCause(t.waiting_cause) : "";
      html += '<span class="tl-chip status-' + esc(t.status) + '" data-task-run="' + t.id + '">' + esc(t.type + " " + t.version) + " " + esc(t.status) + cause + "</span>";
    }
    html += "</div></div>";
  }
  return html + "</div>";
}

function taskActions(t) {
  const b = (cls, label) => '<button type="button" class="task-' + cls + '" data-id="' + t.id + '">' + label + "</button>";
  let html = "";
  if (t.status === "FAILED" || t.status === "CANCELED") html += b("retry", "Retry");
  if (["PENDING", "AVAILABLE", "FAILED", "CANCELED"].includes(t.status)) html += b("skip", "Skip");
  if (["PENDING", "AVAILABLE", "RUNNING"].includes(t.status)) html += b("cancel", "Cancel");
  return html;
}

export async function rolloutPage(id) {
  const [r, page] = await Promise.all([api("GET", "/rollouts/" + id), api("GET", "/rollouts/" + id + "/tasks?limit=500")]);
  const tasks = page.items;
  const now = Date.now();
  const active = ["RUNNING", "PAUSED"].includes(r.status);
  let html = '<div data-region="head"><h2><a href="#rollouts">Rollouts</a> / ' + esc(r.name) + " " + rolloutStatus(r) + temporalLink("rollout/" + r.id) + "</h2>" +
    '<div class="toolbar" role="toolbar" aria-label="rollout commands">' +
    (r.status === "PAUSED" ? '<button type="button" id="rollout-resume">Resume</button>' : '<button type="button" id="rollout-pause"' + (active ? "" : " disabled") + ">Pause</button>") +
    '<button type="button" id="rollout-cancel" class="danger"' + (active ? "" : " disabled") + ">Cancel rollout…</button></div>" +
    '<p class="form-error error" role="alert" id="rollout-result"></p>' + bar(r.counts || {}, order, "tasks") +
    "<p>" + num(r.progress.finished) + " of " + num(r.progress.total) + " tasks finished · parallel limit " + r.parallel_limit + "</p></div>";
  html += '<section class="panel"><h3>Timeline</h3><p class="muted">One lane per database; a block runs from a task\'s start to its end. Tasks not started wait at the right, with the gate that holds them.</p>' +
    '<div data-region="timeline">' + (tasks.length ? timeline(tasks, now) : '<p class="muted">No tasks.</p>') + "</div></section>";
  html += '<section class="panel"><h3 id="tasks-title">Task runs</h3><div data-region="tasks"><table id="tasks" aria-labelledby="tasks-title"><thead><tr><th scope="col">ID</th><th scope="col">Database</th><th scope="col">Type</th><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Waiting for</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Actions</th></tr></thead><tbody>';
  for (const t of tasks) {
    html += '<tr id="task-run-' + t.id + '" data-task-run="' + t.id + '"><td>' + t.id + "</td><td>" + esc(t.database) + "</td><td>" + esc(t.type) + "</td><td>" + esc(t.version) +
      '</td><td class="status-' + esc(t.status) + '">' + esc(t.status) + (t.error ? ' <span class="muted">' + esc(t.error) + "</span>" : "") + '</td><td class="waiting">' +
      (t.status === "PENDING" ? waitingCause(t.waiting_cause) : "") + "</td><td>" + when(t.started_at) + "</td><td>" + when(t.finished_at) + "</td><td>" + taskActions(t) + "</td></tr>";
  }
  html += "</tbody></table></div></section>";
  return {
    title: r.name, html, live: true,
    mount(root, ctx) {
      if (!ctx.first) return;
      const say = (msg) => { $("#rollout-result", root).textContent = msg; };
      const run = async (method, path) => {
        try { await api(method, path, {}); say(""); } catch (e) { say((e.field ? e.field + ": " : "") + e.message); }
        ctx.rerender();
      };
      root.addEventListener("click", (ev) => {
        const b = ev.target.closest("button");
        if (!b) return;
        if (b.id === "rollout-pause") run("POST", "/rollouts/" + id + "/pause");
        else if (b.id === "rollout-resume") run("POST", "/rollouts/" + id + "/resume");
        else if (b.id === "rollout-cancel") {
          dialog("Cancel rollout " + r.name + "?", "<p>Tasks not started are canceled; running ones are stopped.</p>", "Cancel rollout", async () => {
            await api("POST", "/rollouts/" + id + "/cancel", {});
            ctx.rerender();
          });
        } else if (b.classList.contains("tl-task")) {
          const row = $("#task-run-" + b.dataset.taskRun, root);
          if (row) { row.scrollIntoView({ block: "center" }); row.classList.add("highlight"); setTimeout(() => row.classList.remove("highlight"), 1500); }
        } else {
          for (const verb of ["retry", "skip", "cancel"]) {
            if (b.classList.contains("task-" + verb)) run("POST", "/task-runs/" + b.dataset.id + "/" + verb);
          }
        }
      }, { signal: ctx.signal });
    },
  };
}
