// The create and edit form. As the user types, the API checks the schedule
// (POST /schedules/preview) and the form shows its description and next 10 fire times, or
// the API's problem beside the field it names.
import { api } from "./api.js";
import { $, $$, esc, field, input, relative, select, showProblem, toISO, toLocalInput, when } from "./ui.js";
import { httpFields, readHTTP, readRetry, retryFields, showSecret } from "./http_action.js";

const overlaps = ["skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"];
const units = ["SECONDS", "MINUTES", "HOURS", "DAYS"];

function zones() {
  try { return Intl.supportedValuesOf("timeZone"); } catch (e) { return ["UTC"]; }
}

function radio(name, value, label, checked) {
  const id = "f-" + name + "-" + value;
  return '<label class="inline" for="' + id + '"><input type="radio" id="' + id + '" name="' + name + '" value="' + value + '"' + (checked ? " checked" : "") + "> " + esc(label) + "</label>";
}

function json(v) { return v === undefined || v === null ? "" : JSON.stringify(v, null, 2); }

// formRequest reads the form into a POST /schedules body (edit: a PATCH body). A JSON field
// that does not parse is refused here, naming it like the API would.
function formRequest(form, editing) {
  const v = (id) => form.elements[id].value.trim();
  const spec = {};
  const timing = form.elements.timing.value;
  if (timing === "cron") spec.cron = v("f-cron");
  else if (timing === "at") spec.at = v("f-at") ? toISO(v("f-at")) : "";
  else spec.interval = { every: Number(v("f-every") || 0), unit: v("f-unit") };
  if (v("f-timezone")) spec.timezone = v("f-timezone");
  if (timing !== "at" && v("f-start")) spec.start_at = toISO(v("f-start"));
  if (timing !== "at" && v("f-end")) spec.end_at = toISO(v("f-end"));
  if (v("f-jitter")) spec.jitter = v("f-jitter");
  const calendars = v("f-calendars").split(",").map(c => c.trim()).filter(c => c);
  if (calendars.length) spec.exclude_calendars = calendars;
  const parse = (id, fieldName) => {
    if (!v(id)) return undefined;
    try { return JSON.parse(v(id)); } catch (e) {
      throw Object.assign(new Error("not JSON: " + e.message), { field: fieldName });
    }
  };
  let action;
  const kind = form.elements.actionkind.value;
  if (kind === "event") {
    action = { kind: "event", topic: v("f-topic"), type: v("f-type") };
    const data = parse("f-data", "action.data");
    if (data !== undefined) action.data = data;
  } else if (kind === "http") {
    action = readHTTP(v, parse);
  } else {
    action = { kind: "workflow", workflow_type: v("f-wftype"), task_queue: v("f-taskqueue") };
    const inp = parse("f-input", "action.input");
    if (inp !== undefined) action.input = inp;
  }
  const policies = { overlap: v("f-overlap"), catchup_window: v("f-catchup") || "0s", skip_if_successful: form.elements["f-skip"].checked };
  if (v("f-max")) {
    policies.max_concurrent = Number(v("f-max"));
    policies.overlap_when_full = v("f-whenfull");
  }
  const req = { spec, action, policies, metrics: form.elements["f-metrics"].checked, labels: parseLabels(v("f-labels")) };
  // An http or workflow action's retry policy: null asks for none (an http action's defaults).
  if (kind !== "event") req.retry = readRetry(v);
  if (timing === "at") req.after_completion = v("f-after");
  if (!editing) {
    req.name = v("f-name");
    req.paused = form.elements["f-paused"].checked;
    if (req.paused && v("f-note")) req.note = v("f-note");
  }
  return req;
}

// parseLabels reads "key=value" pairs, one per line or comma-separated, into the labels
// object; a pair without "=" is refused here, naming the field like the API would.
function parseLabels(text) {
  const labels = {};
  for (const part of text.split(/[\n,]/)) {
    const p = part.trim();
    if (!p) continue;
    const i = p.indexOf("=");
    if (i < 0) throw Object.assign(new Error('want key=value, got "' + p + '"'), { field: "labels" });
    labels[p.slice(0, i).trim()] = p.slice(i + 1).trim();
  }
  return labels;
}

function labelLines(labels) {
  return Object.keys(labels || {}).sort().map(k => k + "=" + labels[k]).join("\n");
}

function toggle(form) {
  const timing = form.elements.timing.value;
  $("#cron-fields", form).hidden = timing !== "cron";
  $("#interval-fields", form).hidden = timing !== "interval";
  $("#at-fields", form).hidden = timing !== "at";
  $("#bounds-fields", form).hidden = timing === "at";
  const kind = form.elements.actionkind.value;
  $("#event-fields", form).hidden = kind !== "event";
  $("#workflow-fields", form).hidden = kind !== "workflow";
  $("#http-fields", form).hidden = kind !== "http";
  $("#retry-fields", form).hidden = kind === "event";
  if (form.elements["f-paused"]) $("#note-field", form).hidden = !form.elements["f-paused"].checked;
}

export async function scheduleForm(name) {
  const editing = !!name;
  let s = null;
  if (editing) s = await api("GET", "/schedules/" + encodeURIComponent(name));
  // The calendars a schedule may exclude, offered as the user types.
  let calendars = [];
  try { calendars = (await api("GET", "/calendars?limit=500")).items.map(c => c.name); } catch (e) { calendars = []; }
  const spec = (s && s.spec) || {};
  const iv = spec.interval && typeof spec.interval === "object" ? spec.interval : { every: 1, unit: "MINUTES" };
  const act = (s && s.action) || { kind: "event" };
  const pol = (s && s.policies) || { overlap: "skip", catchup_window: "0s" };
  const title = editing ? "Edit " + name : "New schedule";
  let html = '<h2><a href="#schedules">Schedules</a> / ' + esc(title) + "</h2>";
  html += '<div class="form-layout"><form id="schedule-form" class="schedule-form" novalidate>';
  if (!editing) {
    html += field("f-name", "Name", "name", input("f-name", "name", "", 'required maxlength="128" autocomplete="off" pattern="[A-Za-z0-9][A-Za-z0-9._-]*"'), "letters, digits, '.', '_' or '-'");
  }
  html += '<fieldset id="f-timing" data-field="spec" aria-describedby="f-timing-error"><legend>Timing</legend>' +
    radio("timing", "cron", "Cron", !spec.interval && !spec.at) + radio("timing", "interval", "Interval", !!spec.interval) +
    radio("timing", "at", "Once", !!spec.at) +
    '<small class="field-error error" id="f-timing-error" aria-live="polite"></small>' +
    '<div id="cron-fields">' + field("f-cron", "Cron expression", "spec.cron", input("f-cron", "spec.cron", spec.cron || "0 * * * *", 'autocomplete="off" spellcheck="false"'),
      "5 fields (or 6 with seconds first), names, ranges, steps, @hourly and the like") + "</div>" +
    '<div id="interval-fields" class="row">' + field("f-every", "Every", "spec.interval", input("f-every", "spec.interval", iv.every, 'type="number" min="1" step="1"')) +
    field("f-unit", "Unit", "spec.interval.unit", select("f-unit", "spec.interval.unit", units.map(u => [u, u.toLowerCase()]), iv.unit)) + "</div>" +
    '<div id="at-fields" class="row">' + field("f-at", "At (UTC)", "spec.at", input("f-at", "spec.at", toLocalInput(spec.at), 'type="datetime-local" step="1"'),
      "fires once, then the schedule is completed") +
    field("f-after", "Once its run ended", "after_completion", select("f-after", "after_completion", [["keep", "keep it, completed"], ["delete", "delete it"]],
      (s && s.after_completion) || "keep")) + "</div>" +
    field("f-timezone", "Time zone", "spec.timezone", input("f-timezone", "spec.timezone", spec.timezone || "UTC", 'list="zones" autocomplete="off"') +
      '<datalist id="zones">' + zones().map(z => '<option value="' + esc(z) + '">').join("") + "</datalist>", "an IANA name; DST handled by its rules") +
    field("f-calendars", "Exclude calendars (optional)", "spec.exclude_calendars", input("f-calendars", "spec.exclude_calendars", (spec.exclude_calendars || []).join(", "),
      'list="calendar-names" autocomplete="off" spellcheck="false"') + '<datalist id="calendar-names">' + calendars.map(c => '<option value="' + esc(c) + '">').join("") + "</datalist>",
      'names, comma-separated: a tick they exclude is recorded skipped (<a href="#calendars">calendars</a>)') +
    '<div class="row" id="bounds-fields">' + field("f-start", "Start at (UTC, optional)", "spec.start_at", input("f-start", "spec.start_at", toLocalInput(spec.start_at), 'type="datetime-local" step="1"'), "an interval's anchor") +
    field("f-end", "End at (UTC, optional)", "spec.end_at", input("f-end", "spec.end_at", toLocalInput(spec.end_at), 'type="datetime-local" step="1"')) + "</div>" +
    field("f-jitter", "Jitter (optional)", "spec.jitter", input("f-jitter", "spec.jitter", spec.jitter && spec.jitter !== "0s" ? spec.jitter : "", 'placeholder="30s" autocomplete="off"'), "each fire delayed by up to this, the same on every replay") +
    "</fieldset>";
  html += '<fieldset id="f-action" data-field="action" aria-describedby="f-action-error"><legend>Action</legend>' +
    radio("actionkind", "event", "Event (append to the outbox)", act.kind !== "workflow" && act.kind !== "http") + radio("actionkind", "workflow", "Workflow (start on a task queue)", act.kind === "workflow") +
    radio("actionkind", "http", "HTTP request (signed, retried)", act.kind === "http") +
    '<small class="field-error error" id="f-action-error" aria-live="polite"></small>' +
    '<div id="event-fields"><div class="row">' + field("f-topic", "Topic", "action.topic", input("f-topic", "action.topic", act.topic || "", 'autocomplete="off"')) +
    field("f-type", "Event type", "action.type", input("f-type", "action.type", act.type || "", 'autocomplete="off"')) + "</div>" +
    field("f-data", "Data (JSON, optional)", "action.data", '<textarea id="f-data" name="f-data" data-field="action.data" rows="3" aria-describedby="f-data-error">' + esc(act.kind === "event" ? json(act.data) : "") + "</textarea>") + "</div>" +
    '<div id="workflow-fields"><div class="row">' + field("f-wftype", "Workflow type", "action.workflow_type", input("f-wftype", "action.workflow_type", act.workflow_type || "", 'autocomplete="off"')) +
    field("f-taskqueue", "Task queue", "action.task_queue", input("f-taskqueue", "action.task_queue", act.task_queue || "", 'autocomplete="off"')) + "</div>" +
    field("f-input", "Input (JSON, optional)", "action.input", '<textarea id="f-input" name="f-input" data-field="action.input" rows="3" aria-describedby="f-input-error">' + esc(act.kind === "workflow" ? json(act.input) : "") + "</textarea>") + "</div>" +
    httpFields(act) + "</fieldset>" + retryFields(s && s.retry);
  html += '<fieldset><legend>Policies</legend><div class="row">' +
    field("f-overlap", "Overlap", "policies.overlap", select("f-overlap", "policies.overlap", overlaps, pol.overlap || "skip"), "when a tick comes while a run is still running") +
    field("f-catchup", "Catch-up window", "policies.catchup_window", input("f-catchup", "policies.catchup_window", pol.catchup_window || "0s", 'autocomplete="off"'), "ticks missed while tickgate was down and newer than this still run") +
    "</div>" + '<label class="inline" for="f-skip"><input type="checkbox" id="f-skip" name="f-skip" data-field="policies.skip_if_successful"' + (pol.skip_if_successful ? " checked" : "") +
    "> Skip a tick if a run succeeded since the previous one</label>" +
    '<small class="field-error error" id="f-skip-error"></small>' +
    '<div class="row">' + field("f-max", "Max concurrent (optional)", "policies.max_concurrent", input("f-max", "policies.max_concurrent", pol.max_concurrent || "", 'type="number" min="1" step="1"'),
      "under allow_all: at most this many runs at once") +
    field("f-whenfull", "When full", "policies.overlap_when_full", select("f-whenfull", "policies.overlap_when_full", [["buffer", "the tick waits"], ["skip", "the tick is skipped"]], pol.overlap_when_full || "buffer")) +
    "</div></fieldset>";
  html += '<fieldset><legend>Labels</legend>' + field("f-labels", "Labels (key=value, one per line)", "labels",
    '<textarea id="f-labels" name="f-labels" data-field="labels" rows="2" spellcheck="false" aria-describedby="f-labels-error">' + esc(labelLines(s && s.labels)) + "</textarea>",
    "to select schedules by, in lists and bulk pause") + "</fieldset>";
  html += '<fieldset><legend>Options</legend>';
  if (!editing) {
    html += '<label class="inline" for="f-paused"><input type="checkbox" id="f-paused" name="f-paused" data-field="paused"> Create it paused</label>' +
      '<div id="note-field">' + field("f-note", "Note", "note", input("f-note", "note", "", 'autocomplete="off"')) + "</div>";
  }
  html += '<label class="inline" for="f-metrics"><input type="checkbox" id="f-metrics" name="f-metrics" data-field="metrics"' + (s && s.metrics ? " checked" : "") +
    "> Prometheus series of its own (at most 100 schedules)</label>" + '<small class="field-error error" id="f-metrics-error"></small></fieldset>';
  html += '<p class="form-error error" role="alert"></p><div class="actions"><button type="submit" class="primary" id="save">' + (editing ? "Save changes" : "Create schedule") +
    '</button> <a class="button" href="' + (editing ? "#schedule/" + encodeURIComponent(name) : "#schedules") + '">Cancel</a></div></form>';
  html += '<aside class="panel preview" aria-labelledby="preview-title"><h3 id="preview-title">Preview</h3><div id="preview" role="status" aria-live="polite"><p class="muted">Checking…</p></div></aside></div>';

  return {
    title, html,
    mount(root, ctx) {
      const form = $("#schedule-form", root);
      const opts = { signal: ctx.signal };
      let seq = 0;
      let timer = null;
      const preview = async () => {
        const mine = ++seq;
        let req;
        try {
          req = formRequest(form, editing);
        } catch (e) {
          showProblem(e, form);
          $("#preview", root).innerHTML = '<p class="error">' + esc(e.field + ": " + e.message) + "</p>";
          return;
        }
        if (editing) req.name = name;
        if (!req.name) delete req.name;
        delete req.version;
        try {
          const p = await api("POST", "/schedules/preview", req);
          if (mine !== seq || ctx.signal.aborted) return; // a newer preview, or the page was left
          showProblem(null, form);
          const now = Date.now();
          $("#preview", root).innerHTML = '<p id="preview-description"><strong>' + esc(p.description) + "</strong></p>" +
            (p.next_fire_times.length ? '<p>Next ' + p.next_fire_times.length + ' fire times:</p><ol id="preview-times" class="compact">' +
              p.next_fire_times.map(t => "<li>" + when(t) + ' <span class="muted">' + relative(t, now) + "</span></li>").join("") + "</ol>"
              : '<p class="muted">It never fires again (end_at has passed, or its calendars exclude every tick ahead).</p>');
        } catch (e) {
          if (mine !== seq || ctx.signal.aborted) return;
          showProblem(e, form);
          $("#preview", root).innerHTML = '<p class="error" id="preview-error">' + esc((e.field ? e.field + ": " : "") + e.message) + "</p>";
        }
      };
      const soon = () => { clearTimeout(timer); timer = setTimeout(preview, 250); };
      ctx.signal.addEventListener("abort", () => clearTimeout(timer)); // no preview of a page that was left
      form.addEventListener("input", soon, opts);
      form.addEventListener("change", () => { toggle(form); soon(); }, opts);
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const button = $("#save", form);
        button.disabled = true;
        try {
          const req = formRequest(form, editing);
          let saved;
          if (editing) saved = await api("PATCH", "/schedules/" + encodeURIComponent(name), req, { "If-Match": '"' + s.version + '"' });
          else saved = await api("POST", "/schedules", req);
          const to = "#schedule/" + encodeURIComponent(saved.name);
          // A new http schedule's signing secret is in this answer only.
          if (saved.signing_secret) showSecret(saved.name, saved.signing_secret, () => { location.hash = to; });
          else location.hash = to;
        } catch (e) {
          showProblem(e, form);
          const bad = $("[aria-invalid=true]", form);
          if (bad) bad.focus();
        } finally {
          button.disabled = false;
        }
      }, opts);
      toggle(form);
      preview();
      const first = $$("input, select", form)[0];
      if (first && !editing) first.focus();
    },
  };
}
