// Device dispatch: PCs and their slot grids (each of capacity slots with the execution in
// it, its attempt and the time left to its timeout), device tasks and their progress, and
// each device's attempts with their errors.
import { api } from "./api.js";
import { $, bar, dialog, esc, num, pager, seconds, temporalQuery, when } from "./ui.js";

const execOrder = ["succeeded", "active", "failed", "canceled"];
let pcPaging = { cursors: [], cursor: "", next: "" };
let taskPaging = { cursors: [], cursor: "", next: "" };

function pageClicks(root, ctx, id, paging) {
  root.addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (b && b.id === id + "-next" && paging.next) { paging.cursors.push(paging.cursor); paging.cursor = paging.next; ctx.rerender(); }
    if (b && b.id === id + "-prev") { paging.cursor = paging.cursors.pop() || ""; ctx.rerender(); }
  }, { signal: ctx.signal });
}

export async function pcList() {
  const [page, tasks] = await Promise.all([
    api("GET", "/pcs?limit=50" + (pcPaging.cursor ? "&cursor=" + encodeURIComponent(pcPaging.cursor) : "")),
    api("GET", "/stats/overview?window=1m"),
  ]);
  pcPaging.next = page.next_cursor;
  const details = await Promise.all(page.items.map(p => api("GET", "/pcs/" + encodeURIComponent(p.name)).catch(() => p)));
  const active = tasks.device_task;
  let html = "<h2>PCs</h2><p data-region=\"active\">Active task: " + (active ? '<a href="#task/' + active.id + '">#' + active.id + "</a> <code>" + esc(JSON.stringify(active.payload)) + "</code>" : '<span class="muted">none</span>') + "</p>";
  html += '<div data-region="list"><table id="pcs"><thead><tr><th scope="col">PC</th><th scope="col">Slots (running / target)</th><th scope="col">Eligible devices</th><th scope="col">Capacity</th><th scope="col">Devices</th></tr></thead><tbody>';
  for (const p of details) {
    const sl = p.slots || { running: 0, target: 0, eligible: 0 };
    const devs = (p.devices || []).map(d => '<span class="status-' + esc(d.status) + '">' + esc(d.serial) + " (" + esc(d.status) + ")</span>").join(", ");
    html += '<tr data-pc="' + esc(p.name) + '"><td><a href="#pc/' + encodeURIComponent(p.name) + '">' + esc(p.name) + "</a></td><td>" +
      bar({ running: sl.running, free: Math.max(0, sl.target - sl.running) }, ["running", "free"], "slots") +
      '<span class="slots">' + sl.running + " / " + sl.target + "</span></td><td>" + sl.eligible + "</td><td>" + p.device_capacity + "</td><td>" + devs + "</td></tr>";
  }
  html += "</tbody></table>" + (page.items.length ? "" : '<p class="muted">No PCs yet.</p>') + pager("pcs-page", pcPaging.cursors.length > 0, page.next_cursor) + "</div>";
  return { title: "PCs", html, live: true, mount(root, ctx) { if (ctx.first) pageClicks(root, ctx, "pcs-page", pcPaging); } };
}

function slotCell(s, target, serverNow) {
  const e = s.execution;
  if (!e) {
    const why = s.slot > target ? "idle: no eligible device for it" : "free";
    return '<li class="slot slot-free" data-slot="' + s.slot + '" aria-label="slot ' + s.slot + ": " + why + '"><span class="slot-n">' + s.slot + '</span><span class="muted">' + why + "</span></li>";
  }
  let left = "";
  if (e.timeout_at) {
    const secs = (Date.parse(e.timeout_at) - serverNow) / 1000;
    left = secs > 0 ? seconds(secs) + " to timeout" : "timed out " + seconds(-secs) + " ago";
  } else {
    left = "not sent yet";
  }
  const label = "slot " + s.slot + ": execution " + e.id + " of task " + e.task_id + " on " + e.device + ", " + e.status + ", attempt " + e.attempt + " of " + e.max_attempts + ", " + left;
  return '<li class="slot status-' + esc(e.status) + '" data-slot="' + s.slot + '" data-execution="' + e.id + '" aria-label="' + esc(label) + '" title="' + esc(label) + '">' +
    '<span class="slot-n">' + s.slot + '</span><strong class="slot-device">' + esc(e.device) + "</strong>" +
    '<span class="slot-exec">execution <a href="#task/' + e.task_id + '">#' + e.id + "</a></span>" +
    '<span class="slot-attempt">attempt ' + e.attempt + "/" + e.max_attempts + "</span>" +
    '<span class="slot-status">' + esc(e.status) + '</span><span class="slot-left">' + esc(left) + "</span></li>";
}

export async function pcPage(name) {
  const enc = encodeURIComponent(name);
  const [g, pc] = await Promise.all([api("GET", "/pcs/" + enc + "/slots"), api("GET", "/pcs/" + enc)]);
  const serverNow = Date.parse(g.now);
  let html = '<h2><a href="#pcs">PCs</a> / ' + esc(name) + temporalQuery('TickgatePC="' + name + '"') + "</h2>";
  html += '<p data-region="summary" id="slot-summary">' + g.running + " of " + g.target + " slots busy (target = min(capacity " + g.device_capacity + ", eligible devices " + g.eligible + "))</p>";
  html += '<section class="panel"><h3 id="slots-title">Slots</h3><div data-region="slots"><ol class="slot-grid" id="slot-grid" aria-labelledby="slots-title">' +
    g.slots.map(s => slotCell(s, g.target, serverNow)).join("") + "</ol></div></section>";
  html += '<section class="panel"><h3 id="devices-title">Devices</h3><p class="form-error error" role="alert" id="device-result"></p><div data-region="devices"><table id="devices" aria-labelledby="devices-title"><thead><tr><th scope="col">Serial</th><th scope="col">Status</th><th scope="col">Error</th><th scope="col">Updated</th><th scope="col">Actions</th></tr></thead><tbody>';
  for (const d of pc.devices || []) {
    const action = d.status === "online" ? ["offline", "Take offline"] : ["online", d.status === "error" ? "Reset to online" : "Bring online"];
    html += '<tr data-device="' + esc(d.serial) + '"><td>' + esc(d.serial) + '</td><td class="status-' + esc(d.status) + '">' + esc(d.status) + "</td><td>" + esc(d.error) +
      "</td><td>" + when(d.updated_at) + '</td><td><button type="button" class="device-status" data-serial="' + esc(d.serial) + '" data-status="' + action[0] + '">' + action[1] + "</button></td></tr>";
  }
  html += "</tbody></table></div></section>";
  return {
    title: name, html, live: true,
    mount(root, ctx) {
      if (!ctx.first) return;
      root.addEventListener("click", async (ev) => {
        const b = ev.target.closest("button.device-status");
        if (!b) return;
        try {
          await api("PATCH", "/devices/" + encodeURIComponent(b.dataset.serial), { status: b.dataset.status });
          $("#device-result", root).textContent = "";
        } catch (e) { $("#device-result", root).textContent = (e.field ? e.field + ": " : "") + e.message; }
        ctx.rerender();
      }, { signal: ctx.signal });
    },
  };
}

export async function taskList() {
  const page = await api("GET", "/tasks?limit=50" + (taskPaging.cursor ? "&cursor=" + encodeURIComponent(taskPaging.cursor) : ""));
  taskPaging.next = page.next_cursor;
  let html = '<h2>Device tasks</h2><p class="form-error error" role="alert" id="task-result"></p><div data-region="list"><table id="devtasks"><thead><tr><th scope="col">ID</th><th scope="col">Status</th><th scope="col">Payload</th><th scope="col">Created</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Actions</th></tr></thead><tbody>';
  for (const t of page.items) {
    html += '<tr data-task="' + t.id + '"><td><a href="#task/' + t.id + '">' + t.id + '</a></td><td class="status-' + esc(t.status) + '">' + esc(t.status) + (t.error ? ' <span class="muted">' + esc(t.error) + "</span>" : "") +
      "</td><td><code>" + esc(JSON.stringify(t.payload)) + "</code></td><td>" + when(t.created_at) + "</td><td>" + when(t.started_at) + "</td><td>" + when(t.finished_at) + "</td><td>" +
      (["pending", "running"].includes(t.status) ? '<button type="button" class="task-cancel" data-id="' + t.id + '">Cancel</button>' : "") + "</td></tr>";
  }
  html += "</tbody></table>" + (page.items.length ? "" : '<p class="muted">No device tasks yet.</p>') + pager("tasks-page", taskPaging.cursors.length > 0, page.next_cursor) + "</div>";
  return {
    title: "Device tasks", html, live: true,
    mount(root, ctx) {
      if (!ctx.first) return;
      pageClicks(root, ctx, "tasks-page", taskPaging);
      root.addEventListener("click", (ev) => {
        const b = ev.target.closest("button.task-cancel");
        if (b) cancelTask(b.dataset.id, ctx.rerender);
      }, { signal: ctx.signal });
    },
  };
}

function cancelTask(id, after) {
  dialog("Cancel device task #" + id + "?", "<p>Executions not sent yet are canceled; commands out on devices may still finish.</p>", "Cancel task", async () => {
    await api("POST", "/tasks/" + id + "/cancel", {});
    after();
  });
}

// attemptsOpen keeps which executions' attempt histories are shown across refreshes.
const attemptsOpen = new Map();

export async function taskPage(id) {
  const t = await api("GET", "/tasks/" + id);
  const c = t.counts || {};
  for (const key of attemptsOpen.keys()) {
    attemptsOpen.set(key, await api("GET", "/task-devices/" + key + "/events"));
  }
  let html = '<div data-region="head"><h2><a href="#tasks">Device tasks</a> / #' + t.id + ' <span class="badge status-' + esc(t.status) + '" id="task-status">' + esc(t.status) + "</span>" + temporalQuery('TickgateTask="' + t.id + '"') + "</h2>" +
    '<div class="toolbar">' + (["pending", "running"].includes(t.status) ? '<button type="button" id="task-cancel" class="danger">Cancel task…</button>' : "") + "</div>" +
    "<p><code>" + esc(JSON.stringify(t.payload)) + "</code>" + (t.error ? ' <span class="error">' + esc(t.error) + "</span>" : "") + "</p>" +
    '<div id="task-progress">' + bar({ succeeded: c.succeeded, active: c.active, failed: c.failed, canceled: c.canceled }, execOrder, "executions") + "</div>" +
    "<p>" + num(c.succeeded) + " succeeded, " + num(c.active) + " active, " + num(c.failed) + " failed, " + num(c.canceled) + " canceled · at most " + t.max_attempts + " attempts each" +
    (t.abort ? " · aborts once " + t.abort.min_executed + " are final and more than " + t.abort.failed_percent + "% failed" : "") + "</p>" +
    (t.rate ? '<p id="task-rate">Rate: ' + (t.rate.per_minute ? "at most " + t.rate.per_minute + " sent a minute" : "") +
      (t.rate.exponential ? (t.rate.per_minute ? "; " : "") + "from " + t.rate.exponential.base_per_minute + " a minute, ×" + t.rate.exponential.factor + " each " + t.rate.exponential.after_succeeded + " succeeded" : "") + "</p>" : "") +
    (t.windows && t.windows.length ? '<p id="task-windows">Windows: ' + t.windows.map(w => esc(w.cron + " for " + w.duration + " (" + (w.timezone || "UTC") + ")")).join("; ") + "</p>" : "") +
    (t.waiting_cause ? '<p class="status-reason" id="task-waiting">Holding back: ' + esc(t.waiting_cause) + "</p>" : "") + "</div>";
  html += '<section class="panel"><h3 id="exec-title">Executions</h3><div data-region="executions"><table id="executions" aria-labelledby="exec-title"><thead><tr><th scope="col">ID</th><th scope="col">Device</th><th scope="col">PC</th><th scope="col">Slot</th><th scope="col">Status</th><th scope="col">Attempt</th><th scope="col">Error</th><th scope="col">Sent</th><th scope="col">Completed</th><th scope="col">Attempts</th></tr></thead><tbody>';
  for (const e of t.devices || []) {
    const open = attemptsOpen.get(String(e.id));
    html += '<tr data-execution="' + e.id + '"><td>' + e.id + "</td><td>" + esc(e.device) + '</td><td><a href="#pc/' + encodeURIComponent(e.pc) + '">' + esc(e.pc) + "</a></td><td>" + (e.slot || "") +
      '</td><td class="status-' + esc(e.status) + '">' + esc(e.status) + "</td><td>" + e.attempt + "/" + e.max_attempts + '</td><td class="error">' + esc(e.error) +
      "</td><td>" + when(e.sent_at) + "</td><td>" + when(e.completed_at) + '</td><td><button type="button" class="attempts" data-id="' + e.id + '" aria-expanded="' + (open ? "true" : "false") + '">' + (open ? "Hide" : "Show") + "</button></td></tr>";
    if (open) {
      html += '<tr class="attempt-history" data-history="' + e.id + '"><td colspan="10"><ol class="compact">' + open.items.map(ev => "<li>attempt " + ev.attempt + " · <strong>" + esc(ev.type) + "</strong> " +
        when(ev.created_at) + (ev.detail ? ' · <span class="error">' + esc(ev.detail) + "</span>" : "") + "</li>").join("") + "</ol></td></tr>";
    }
  }
  html += "</tbody></table></div></section>";
  return {
    title: "Task #" + t.id, html, live: true,
    mount(root, ctx) {
      if (!ctx.first) return;
      root.addEventListener("click", async (ev) => {
        const b = ev.target.closest("button");
        if (!b) return;
        if (b.id === "task-cancel") cancelTask(id, ctx.rerender);
        if (b.classList.contains("attempts")) {
          if (attemptsOpen.has(b.dataset.id)) attemptsOpen.delete(b.dataset.id);
          else attemptsOpen.set(b.dataset.id, null);
          ctx.rerender();
        }
      }, { signal: ctx.signal });
    },
  };
}
