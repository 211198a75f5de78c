// tickgate dashboard: plain JavaScript over the /api/v1 JSON API with a bearer token kept
// in localStorage. No framework, no CDN.
"use strict";

const cfg = window.TICKGATE || { temporalUI: "", namespace: "default" };
const $ = (sel) => document.querySelector(sel);
let refreshTimer = null;

function token() { return localStorage.getItem("tickgate-token") || ""; }

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + token() } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch("/api/v1" + path, opts);
  const text = await resp.text();
  const data = text ? JSON.parse(text) : null;
  if (!resp.ok) {
    const err = new Error((data && (data.detail || data.title)) || resp.statusText);
    err.status = resp.status;
    throw err;
  }
  return data;
}

function esc(s) {
  return String(s === null || s === undefined ? "" : s)
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
function when(t) { return t ? esc(new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z")) : '<span class="muted">–</span>'; }
function temporalLink(workflowId) {
  if (!cfg.temporalUI) return "";
  const url = cfg.temporalUI + "/namespaces/" + encodeURIComponent(cfg.namespace) + "/workflows/" + encodeURIComponent(workflowId);
  return '<a class="temporal" target="_blank" rel="noopener" href="' + esc(url) + '">Temporal ↗</a>';
}
function temporalQuery(query) {
  if (!cfg.temporalUI) return "";
  const url = cfg.temporalUI + "/namespaces/" + encodeURIComponent(cfg.namespace) + "/workflows?query=" + encodeURIComponent(query);
  return '<a class="temporal" target="_blank" rel="noopener" href="' + esc(url) + '">Temporal ↗</a>';
}
function bar(counts, order) {
  const total = order.reduce((n, k) => n + (counts[k] || 0), 0);
  let html = '<div class="bar" title="' + esc(order.filter(k => counts[k]).map(k => k + " " + counts[k]).join(", ")) + '">';
  if (total > 0) {
    for (const k of order) {
      // The width goes in data-width and is applied by sizeBars: the Content-Security-Policy
      // refuses style attributes in markup.
      if (counts[k]) html += '<span class="seg-' + esc(k) + '" data-width="' + (100 * counts[k] / total) + '"></span>';
    }
  }
  html += "</div><div class=\"legend\">";
  for (const k of order) if (counts[k]) html += '<span class="status-' + esc(k) + '">' + esc(k) + " " + counts[k] + "</span>";
  return html + "</div>";
}
// waiting describes a PENDING task's waiting cause ({"reason": "version", "blocked_by_task": 7, …}).
function waiting(c) {
  if (!c) return "";
  if (typeof c !== "object") return esc(c);
  const rest = Object.keys(c).filter(k => k !== "reason").map(k => esc(k.replace(/_/g, " ")) + " " + esc(c[k]));
  return "<strong>" + esc(String(c.reason || "").replace(/_/g, " ")) + "</strong>" + (rest.length ? " (" + rest.join(", ") + ")" : "");
}
// sizeBars sets each bar segment's width from its data-width (CSSOM, which the policy allows).
function sizeBars(root) {
  for (const seg of root.querySelectorAll("[data-width]")) seg.style.width = seg.dataset.width + "%";
}
function showError(e) { $("#error").textContent = e ? String(e.message || e) : ""; }

// ---- views ---------------------------------------------------------------------------

async function schedules() {
  const page = await api("GET", "/schedules?limit=500");
  let html = "<h2>Schedules</h2><table id=\"schedules\"><thead><tr><th>Name</th><th>State</th><th>Next fire</th><th>Last run</th><th>Actions</th><th></th></tr></thead><tbody>";
  for (const s of page.items) {
    const state = s.paused ? "Paused" : "Active";
    html += '<tr data-schedule="' + esc(s.name) + '">' +
      '<td><a href="#schedule/' + encodeURIComponent(s.name) + '">' + esc(s.name) + "</a></td>" +
      '<td class="state state-' + state.toLowerCase() + '">' + state + (s.note ? ' <span class="muted">(' + esc(s.note) + ")</span>" : "") + "</td>" +
      "<td>" + when(s.next_run_at) + "</td><td>" + when(s.last_run_at) + "</td><td>" +
      (s.paused ? '<button class="resume" data-name="' + esc(s.name) + '">Resume</button>'
                : '<button class="pause" data-name="' + esc(s.name) + '">Pause</button>') +
      '<button class="trigger" data-name="' + esc(s.name) + '">Trigger</button></td>' +
      "<td>" + temporalLink("schedule/" + s.name) + "</td></tr>";
  }
  html += "</tbody></table>";
  if (!page.items.length) html += '<p class="muted">No schedules yet.</p>';
  return html;
}

async function scheduleRuns(name) {
  const s = await api("GET", "/schedules/" + encodeURIComponent(name));
  const runs = await api("GET", "/schedules/" + encodeURIComponent(name) + "/runs?limit=200");
  let html = '<h2><a href="#schedules">Schedules</a> / ' + esc(name) + " " + temporalLink("schedule/" + name) + "</h2>";
  html += "<p>" + (s.paused ? "Paused" : "Active") + " · next fire " + when(s.next_run_at) + " · fired " +
    (s.counters ? s.counters.fired + ", skipped " + s.counters.skipped + ", missed " + s.counters.missed : "") + "</p>";
  html += '<table id="runs"><thead><tr><th>ID</th><th>Scheduled</th><th>Fired</th><th>Trigger</th><th>Status</th><th>Reason</th></tr></thead><tbody>';
  for (const r of runs.items) {
    html += '<tr data-run="' + r.id + '"><td>' + r.id + "</td><td>" + when(r.scheduled_at) + "</td><td>" + when(r.fired_at) + "</td><td>" + esc(r.trigger) +
      '</td><td class="status-' + esc(r.status) + '">' + esc(r.status) + '</td><td class="reason">' + esc(r.reason || r.error || "") + "</td></tr>";
  }
  return html + "</tbody></table>";
}

const taskRunOrder = ["DONE", "RUNNING", "AVAILABLE", "PENDING", "FAILED", "CANCELED", "SKIPPED"];
// rolloutStatus shows the status the API derived (DESIGN.md §2); the dashboard never recomputes it.
function rolloutStatus(r) {
  return '<span class="rollout-status status-' + esc(r.status) + '">' + esc(r.status) + "</span>";
}

async function rollouts() {
  const page = await api("GET", "/rollouts?limit=200");
  let html = '<h2>Rollouts</h2><table id="rollouts"><thead><tr><th>ID</th><th>Name</th><th>Status</th><th>Progress</th><th>Parallel</th><th></th></tr></thead><tbody>';
  for (const r of page.items) {
    html += '<tr data-rollout="' + r.id + '"><td><a href="#rollout/' + r.id + '">' + r.id + "</a></td><td>" + esc(r.name) + "</td><td>" + rolloutStatus(r) +
      "</td><td>" + bar(r.counts || {}, taskRunOrder) + " " + (r.progress ? r.progress.finished + "/" + r.progress.total : "") +
      "</td><td>" + r.parallel_limit + "</td><td>" + temporalLink("rollout/" + r.id) + "</td></tr>";
  }
  html += "</tbody></table>";
  if (!page.items.length) html += '<p class="muted">No rollouts yet.</p>';
  return html;
}

async function rolloutTasks(id) {
  const r = await api("GET", "/rollouts/" + encodeURIComponent(id));
  const tasks = await api("GET", "/rollouts/" + encodeURIComponent(id) + "/tasks?limit=500");
  let html = '<h2><a href="#rollouts">Rollouts</a> / ' + esc(r.name) + " " + rolloutStatus(r) + " " + temporalLink("rollout/" + r.id) + "</h2>" + bar(r.counts || {}, taskRunOrder);
  html += '<table id="tasks"><thead><tr><th>ID</th><th>Database</th><th>Type</th><th>Version</th><th>Status</th><th>Waiting for</th><th>Started</th><th>Finished</th></tr></thead><tbody>';
  for (const t of tasks.items) {
    html += '<tr data-task-run="' + t.id + '"><td>' + t.id + "</td><td>" + esc(t.database) + "</td><td>" + esc(t.type) + "</td><td>" + esc(t.version) +
      '</td><td class="status-' + esc(t.status) + '">' + esc(t.status) + '</td><td class="waiting">' + (t.status === "PENDING" ? waiting(t.waiting_cause) : "") +
      "</td><td>" + when(t.started_at) + "</td><td>" + when(t.finished_at) + "</td></tr>";
  }
  return html + "</tbody></table>";
}

async function pcs() {
  const [page, tasks] = await Promise.all([api("GET", "/pcs?limit=200"), api("GET", "/tasks?limit=500")]);
  const active = (tasks.items || []).find(t => t.status === "running");
  let html = "<h2>PCs</h2><p>Active task: " + (active ? '<a href="#tasks">#' + active.id + "</a> " + esc(JSON.stringify(active.payload)) : '<span class="muted">none</span>') + "</p>";
  html += '<table id="pcs"><thead><tr><th>PC</th><th>Slots (running / target)</th><th>Eligible</th><th>Capacity</th><th>Devices</th><th></th></tr></thead><tbody>';
  const details = await Promise.all(page.items.map(p => api("GET", "/pcs/" + encodeURIComponent(p.name)).catch(() => p)));
  for (const p of details) {
    const sl = p.slots || { running: 0, target: 0, eligible: 0 };
    const devs = (p.devices || []).map(d => '<span class="status-' + esc(d.status) + '">' + esc(d.serial) + " (" + esc(d.status) + ")</span>").join(", ");
    html += '<tr data-pc="' + esc(p.name) + '"><td>' + esc(p.name) + "</td><td>" + bar({ running: sl.running, free: Math.max(0, sl.target - sl.running) }, ["running", "free"]) +
      '<span class="slots">' + sl.running + " / " + sl.target + "</span></td><td>" + sl.eligible + "</td><td>" + p.device_capacity + "</td><td>" + devs + "</td><td>" +
      temporalQuery('TickgatePC="' + p.name + '"') + "</td></tr>";
  }
  html += "</tbody></table>";
  return html;
}

async function deviceTasks() {
  const page = await api("GET", "/tasks?limit=200");
  let html = '<h2>Device tasks</h2><table id="devtasks"><thead><tr><th>ID</th><th>Status</th><th>Progress</th><th>Payload</th><th>Created</th><th>Finished</th><th></th></tr></thead><tbody>';
  for (const t of page.items) {
    html += "<tr><td>" + t.id + '</td><td class="status-' + esc(t.status) + '">' + esc(t.status) + "</td><td>" +
      bar(t.counts || {}, ["succeeded", "active", "failed", "cancelled"]) + "</td><td><code>" + esc(JSON.stringify(t.payload)) +
      "</code></td><td>" + when(t.created_at) + "</td><td>" + when(t.finished_at) + "</td><td>" +
      temporalQuery('TickgateTask="' + t.id + '"') + "</td></tr>";
  }
  return html + "</tbody></table>";
}

// ---- routing -------------------------------------------------------------------------

async function render() {
  if (!token()) {
    $("#login").hidden = false; $("#view").hidden = true; $("#nav").hidden = true; $("#logout").hidden = true;
    return;
  }
  $("#login").hidden = true; $("#view").hidden = false; $("#nav").hidden = false; $("#logout").hidden = false;
  const hash = decodeURIComponent(location.hash.replace(/^#/, "")) || "schedules";
  const [tab, arg] = hash.split(/\/(.*)/s);
  document.querySelectorAll("#nav a").forEach(a => a.classList.toggle("active", a.dataset.tab === tab || (tab === "schedule" && a.dataset.tab === "schedules") || (tab === "rollout" && a.dataset.tab === "rollouts")));
  try {
    let html;
    switch (tab) {
      case "schedule": html = await scheduleRuns(arg); break;
      case "rollouts": html = await rollouts(); break;
      case "rollout": html = await rolloutTasks(arg); break;
      case "pcs": html = await pcs(); break;
      case "tasks": html = await deviceTasks(); break;
      default: html = await schedules();
    }
    $("#view").innerHTML = html;
    sizeBars($("#view"));
    showError(null);
  } catch (e) {
    if (e.status === 401) { localStorage.removeItem("tickgate-token"); $("#login-error").textContent = "Token refused: " + e.message; return render(); }
    showError(e);
  }
}

function schedule() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => { await render(); schedule(); }, 3000);
}

document.addEventListener("click", async (ev) => {
  const b = ev.target.closest("button[data-name]");
  if (!b) return;
  const name = b.dataset.name;
  const action = b.classList.contains("pause") ? "pause" : b.classList.contains("resume") ? "resume" : "trigger";
  b.disabled = true;
  try {
    await api("POST", "/schedules/" + encodeURIComponent(name) + "/" + action, action === "pause" ? { note: "paused from the dashboard" } : {});
  } catch (e) { showError(e); }
  await render();
});

$("#login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  localStorage.setItem("tickgate-token", $("#token").value.trim());
  $("#token").value = "";
  $("#login-error").textContent = "";
  await render();
});
$("#logout").addEventListener("click", () => { localStorage.removeItem("tickgate-token"); render(); });
window.addEventListener("hashchange", render);
render().then(schedule);
