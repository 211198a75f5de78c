// Rollouts: the list by derived status, and a rollout's timeline — one lane per database, a
// block per task from its start to its end, PENDING tasks waiting at the lane's end with
// their cause — so the version order and the one-DDL-at-a-time rule are seen at work. A
// rollout with waves (docs/progressive.md) draws each wave above its databases' lanes: its
// bake as a band on the time axis and its health checks as a mark where they ran.
import { api } from "./api.js";
import { $, bar, dialog, esc, field, hashQuery, num, pager, seconds, setHashQuery, temporalLink, waitingCause, when } from "./ui.js";

const order = ["DONE", "RUNNING", "AVAILABLE", "PENDING", "FAILED", "CANCELED", "SKIPPED"];
const derived = ["RUNNING", "PAUSED", "DONE", "FAILED", "CANCELED"];
let paging = { key: null, cursors: [], cursor: "", next: "" };

function rolloutStatus(r) {
  return '<span class="rollout-status badge status-' + esc(r.status) + '">' + esc(r.status) + "</span>";
}

// statusReason says why the engine paused or canceled a rollout, or who did.
function statusReason(r) {
  return r.status_reason ? ' <span class="status-reason">' + esc(r.status_reason) + "</span>" : "";
}

function waveOf(r) {
  return r.wave && r.wave.count > 1 ? ' <span class="muted wave-of">wave ' + r.wave.open + "/" + r.wave.count + "</span>" : "";
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
    html += '<tr data-rollout="' + r.id + '"><td><a href="#rollout/' + r.id + '">' + r.id + "</a></td><td>" + esc(r.name) + waveOf(r) + "</td><td>" + rolloutStatus(r) + statusReason(r) +
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

// healthMark summarises a wave's health results ("2/2 ok", or what failed where).
function healthText(w) {
  if (!w.health || !w.health.length) return "";
  const ok = w.health.filter(h => h.ok).length;
  const failed = w.health.filter(h => !h.ok).map(h => h.target + ": " + (h.detail || "failed"));
  return ok + "/" + w.health.length + " health checks ok" + (failed.length ? " — " + failed.join("; ") : "");
}

// timeline lays each database's tasks on a shared time axis (positions in percent, applied
// through the CSSOM by sizeBars); with waves, each wave's row comes first, with its bake
// band (from its end to the bake's end) and its health mark.
function timeline(tasks, waves, now) {
  const started = tasks.filter(t => t.started_at);
  const t0 = Math.min(...tasks.map(t => Date.parse(t.started_at || t.created_at)), ...waves.filter(w => w.started_at).map(w => Date.parse(w.started_at)));
  // The axis ends now while a task runs or waits, at a bake's end still ahead, and at the
  // last finish once all are done.
  const live = tasks.some(t => !t.finished_at);
  const t1 = Math.max(live ? now : 0, ...started.map(t => Date.parse(t.finished_at || t.started_at)),
    ...waves.filter(w => w.bake_until).map(w => Date.parse(w.bake_until)), ...waves.filter(w => w.checked_at).map(w => Date.parse(w.checked_at)));
  const span = Math.max(1, t1 - t0);
  const at = (ms) => (100 * (ms - t0) / span).toFixed(3);
  const lanes = new Map();
  for (const t of tasks) {
    if (!lanes.has(t.database)) lanes.set(t.database, []);
    lanes.get(t.database).push(t);
  }
  const lane = (db, list) => {
    let html = '<div class="lane" role="listitem" data-lane="' + esc(db) + '"><div class="lane-label">' + esc(db) + '</div><div class="lane-track">';
    for (const t of list.filter(t => t.started_at)) {
      const start = Date.parse(t.started_at);
      const end = t.finished_at ? Date.parse(t.finished_at) : now;
      const label = t.type + " " + t.version + " · " + t.status + " · " + seconds((end - start) / 1000) + (t.error ? " · " + t.error : "");
      html += '<button type="button" class="tl-task status-' + esc(t.status) + '" data-task-run="' + t.id + '" data-left="' + at(start) +
        '" data-width="' + Math.max(0.8, 100 * (end - start) / span).toFixed(3) + '" title="' + esc(label) + '" aria-label="' + esc(label) + '">' + esc(t.version) + "</button>";
    }
    html += '</div><div class="lane-waiting">';
    for (const t of list.filter(t => !t.started_at)) {
      const cause = t.status === "PENDING" && t.waiting_cause ? " — " + waitingCause(t.waiting_cause) : "";
      html += '<span class="tl-chip status-' + esc(t.status) + '" data-task-run="' + t.id + '">' + esc(t.type + " " + t.version) + " " + esc(t.status) + cause + "</span>";
    }
    return html + "</div></div>";
  };
  const waveRow = (w) => {
    let html = '<div class="lane wave-lane" role="listitem" data-wave="' + w.wave + '"><div class="lane-label">Wave ' + w.wave +
      ' <span class="badge wave-status wave-' + esc(w.status) + '">' + esc(w.status) + '</span></div><div class="lane-track">';
    if (w.finished_at && w.bake_until) {
      const from = Date.parse(w.finished_at), to = Date.parse(w.bake_until);
      const label = "bake until " + new Date(to).toISOString().replace("T", " ").slice(0, 19) + "Z" + (w.status === "BAKING" ? " (" + seconds(Math.max(0, to - now) / 1000) + " left)" : "");
      html += '<span class="tl-bake' + (w.status === "BAKING" ? " baking" : "") + '" data-left="' + at(from) + '" data-width="' + Math.max(0.8, 100 * (to - from) / span).toFixed(3) +
        '" title="' + esc(label) + '" aria-label="' + esc(label) + '">bake</span>';
    }
    if (w.checked_at) {
      const failed = w.health.some(h => !h.ok);
      const label = healthText(w) || "health checks passed";
      html += '<span class="tl-health ' + (failed ? "health-failed" : "health-ok") + '" data-left="' + at(Date.parse(w.checked_at)) + '" title="' + esc(label) +
        '" aria-label="' + esc(label) + '">' + (failed ? "✗" : "✓") + "</span>";
    }
    return html + '</div><div class="lane-waiting wave-summary">' + esc(w.databases.join(", ")) + (w.reason ? ' — <span class="error">' + esc(w.reason) + "</span>" : "") + "</div></div>";
  };
  let html = '<div class="timeline" id="timeline" role="list" aria-label="task runs per database over time">' +
    '<div class="tl-axis" aria-hidden="true"><span>' + when(new Date(t0).toISOString()) + "</span><span>" + when(new Date(t1).toISOString()) + "</span></div>";
  const sorted = [...lanes.entries()].sort((a, b) => a[0].localeCompare(b[0]));
  if (!waves.length) return html + sorted.map(([db, list]) => lane(db, list)).join("") + "</div>";
  for (const w of waves) {
    html += waveRow(w);
    for (const [db, list] of sorted) if (w.databases.includes(db)) html += lane(db, list);
  }
  return html + "</div>";
}

// wavesPanel lists each wave: its databases, where it stands, its bake and its health results.
function wavesPanel(r, now) {
  if (!r.waves || !r.waves.length) return "";
  const s = r.strategy || {};
  const rules = [s.bake ? "bake " + s.bake : "no bake", s.health ? "health: " + [s.health.sql ? "SQL probe on each database" : "", s.health.http ? "GET " + s.health.http : ""].filter(Boolean).join(" and ") : "no health check"];
  let html = '<section class="panel"><h3 id="waves-title">Waves</h3><p class="muted">' + esc(rules.join(" · ")) + '</p><ol class="waves" aria-labelledby="waves-title">';
  for (const w of r.waves) {
    let state = esc(w.status);
    if (w.status === "BAKING" && w.bake_until) state += " until " + when(w.bake_until) + " (" + seconds(Math.max(0, Date.parse(w.bake_until) - now) / 1000) + " left)";
    html += '<li class="wave wave-' + esc(w.status) + '" data-wave="' + w.wave + '"><strong>Wave ' + w.wave + '</strong> <span class="badge wave-status wave-' + esc(w.status) + '">' + state +
      "</span> " + esc(w.databases.join(", "));
    if (w.health && w.health.length) {
      html += '<ul class="health">' + w.health.map(h => '<li class="' + (h.ok ? "health-ok" : "health-failed") + '">' + (h.ok ? "✓ " : "✗ ") + esc(h.check + " " + h.target) +
        (h.detail ? ": " + esc(h.detail) : "") + "</li>").join("") + "</ul>";
    }
    if (w.reason) html += ' <span class="error wave-reason">' + esc(w.reason) + "</span>";
    html += "</li>";
  }
  return html + "</ol></section>";
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
  const own = r.frozen && r.frozen.scope === "rollout";
  const waved = r.wave && r.wave.count > 1;
  let html = '<div data-region="head"><h2><a href="#rollouts">Rollouts</a> / ' + esc(r.name) + " " + rolloutStatus(r) + temporalLink("rollout/" + r.id) + "</h2>" +
    (r.status_reason ? '<p class="status-reason" id="rollout-reason">' + esc(r.status_reason) + "</p>" : "") +
    (r.frozen ? '<p class="rollout-frozen" id="rollout-frozen"><strong>Frozen</strong> ' + (own ? "" : "(everything) ") + "since " + when(r.frozen.frozen_at) + " by " +
      esc(r.frozen.frozen_by) + ": " + esc(r.frozen.reason) + "</p>" : "") +
    '<div class="toolbar" role="toolbar" aria-label="rollout commands">' +
    (r.status === "PAUSED" ? '<button type="button" id="rollout-resume">Resume</button>' : '<button type="button" id="rollout-pause"' + (active ? "" : " disabled") + ">Pause</button>") +
    (own ? '<button type="button" id="rollout-unfreeze">Unfreeze</button>' : '<button type="button" id="rollout-freeze"' + (active ? "" : " disabled") + ">Freeze…</button>") +
    '<button type="button" id="rollout-cancel" class="danger"' + (active ? "" : " disabled") + ">Cancel rollout…</button></div></div>" +
    // The result of the last command is outside every region, so that a refresh keeps it.
    '<p class="form-error error" role="alert" id="rollout-result"></p>' +
    '<div data-region="progress">' + bar(r.counts || {}, order, "tasks") +
    "<p>" + num(r.progress.finished) + " of " + num(r.progress.total) + " tasks finished · parallel limit " + r.parallel_limit +
    (r.wave && r.wave.count > 1 ? " · wave " + r.wave.open + " of " + r.wave.count + " open" : "") + "</p></div>";
  html += '<div data-region="waves">' + wavesPanel(r, now) + "</div>";
  html += '<section class="panel"><h3>Timeline</h3><p class="muted">One lane per database' + (r.waves && r.waves.length ? ", under its wave (its bake a band, its health checks a mark)" : "") +
    '; a block runs from a task\'s start to its end. Tasks not started wait at the right, with the gate that holds them.</p>' +
    '<div data-region="timeline">' + (tasks.length ? timeline(tasks, r.waves || [], now) : '<p class="muted">No tasks.</p>') + "</div></section>";
  html += '<section class="panel"><h3 id="tasks-title">Task runs</h3><div data-region="tasks"><table id="tasks" aria-labelledby="tasks-title"><thead><tr><th scope="col">ID</th><th scope="col">Database</th>' + (waved ? '<th scope="col">Wave</th>' : "") + '<th scope="col">Type</th><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Waiting for</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Actions</th></tr></thead><tbody>';
  for (const t of tasks) {
    html += '<tr id="task-run-' + t.id + '" data-task-run="' + t.id + '"><td>' + t.id + "</td><td>" + esc(t.database) + (waved ? "</td><td>" + t.wave : "") + "</td><td>" + esc(t.type) + "</td><td>" + esc(t.version) +
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
        else if (b.id === "rollout-unfreeze") run("POST", "/rollouts/" + id + "/unfreeze");
        else if (b.id === "rollout-freeze") {
          dialog("Freeze rollout " + r.name + "?", "<p>Nothing new of this rollout starts until it is unfrozen; running tasks finish. Who froze it, when and why is kept.</p>" +
            field("rollout-freeze-reason", "Why", "reason", '<textarea id="rollout-freeze-reason" data-field="reason" rows="2" required aria-describedby="rollout-freeze-reason-error"></textarea>'),
          "Freeze", async (form) => {
            await api("POST", "/rollouts/" + id + "/freeze", { reason: $("#rollout-freeze-reason", form).value });
            ctx.rerender();
          });
        }
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
