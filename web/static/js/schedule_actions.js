// A schedule's commands, each in a dialog whose errors are the API's problem details shown
// beside the field they name.
import { api } from "./api.js";
import { dialog, esc, field, input, select, toISO, toLocalInput } from "./ui.js";

const overlaps = ["skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"];
const path = (name, verb) => "/schedules/" + encodeURIComponent(name) + (verb ? "/" + verb : "");

// labelText shows a schedule's labels as "key=value" chips.
export function labelText(labels) {
  const keys = Object.keys(labels || {}).sort();
  if (!keys.length) return '<span class="muted">–</span>';
  return keys.map(k => '<code class="label">' + esc(k + "=" + labels[k]) + "</code>").join(" ");
}

// bulkDialog pauses or resumes every schedule a label selector reaches, with a note for
// their history, and reports each one: changed by this call or in that state already.
export function bulkDialog(pause, selector, after) {
  const verb = pause ? "Pause" : "Resume";
  dialog(verb + " every schedule matching " + selector,
    "<p>Each schedule whose labels match <code>" + esc(selector) + "</code> is " + (pause ? "paused" : "resumed") +
    " through its own command and recorded in its history with your token's name. At most 1,000.</p>" +
    field("d-bulk-note", "Note (why)", "note", '<textarea id="d-bulk-note" name="note" data-field="note" rows="2" maxlength="1000" aria-describedby="d-bulk-note-error"></textarea>') +
    '<input type="hidden" data-field="selector" id="d-bulk-selector">',
  verb, async (form) => {
    const res = await api("POST", "/schedules/" + (pause ? "pause" : "resume"), { selector, note: form.elements.note.value });
    after(res);
  });
}

export function pauseDialog(name, after) {
  dialog("Pause " + name, field("d-note", "Note (why it is paused)", "note",
    '<textarea id="d-note" name="note" data-field="note" rows="2" maxlength="1000" aria-describedby="d-note-error"></textarea>'),
  "Pause", async (form) => {
    await api("POST", path(name, "pause"), { note: form.elements.note.value });
    after();
  });
}

// triggerDialog fires a run now, with an overlap policy for this run and, for a workflow
// action, its input.
export function triggerDialog(name, action, after) {
  let body = field("d-overlap", "Overlap for this run", "overlap",
    select("d-overlap", "overlap", [["", "the schedule's policy"]].concat(overlaps.map(o => [o, o])), ""));
  if (action && action.kind === "workflow") {
    body += field("d-input", "Input (JSON, optional)", "input",
      '<textarea id="d-input" name="input" data-field="input" rows="3" aria-describedby="d-input-error"></textarea>');
  }
  dialog("Trigger " + name + " now", body, "Trigger", async (form) => {
    const req = {};
    if (form.elements["d-overlap"].value) req.overlap = form.elements["d-overlap"].value;
    const raw = form.elements.input && form.elements.input.value.trim();
    if (raw) {
      try { req.input = JSON.parse(raw); } catch (e) { throw Object.assign(new Error("not JSON: " + e.message), { field: "input" }); }
    }
    const res = await api("POST", path(name, "trigger"), req);
    after(res);
  });
}

// backfillDialog runs the ticks the spec gives in a past range (UTC).
export function backfillDialog(name, after) {
  const now = new Date();
  const hourAgo = new Date(now.getTime() - 3600 * 1000);
  dialog("Backfill " + name,
    "<p>Runs every tick of the range the spec gives that has not run yet — also while the schedule is paused. Times are UTC.</p>" +
    field("d-start", "Start (UTC)", "start", input("d-start", "start", toLocalInput(hourAgo), 'type="datetime-local" step="1" required')) +
    field("d-end", "End (UTC)", "end", input("d-end", "end", toLocalInput(now), 'type="datetime-local" step="1" required')) +
    field("d-bf-overlap", "Overlap", "overlap", select("d-bf-overlap", "overlap", [["", "the schedule's policy"]].concat(overlaps.map(o => [o, o])), "")),
  "Backfill", async (form) => {
    const req = { start: toISO(form.elements["d-start"].value), end: toISO(form.elements["d-end"].value) };
    if (form.elements["d-bf-overlap"].value) req.overlap = form.elements["d-bf-overlap"].value;
    const res = await api("POST", path(name, "backfill"), req);
    after(res);
  });
}

export function rescheduleDialog(name, current, after) {
  dialog("Reschedule " + name,
    "<p>Moves the next fire to this time (UTC); the spec's ticks follow from there.</p>" +
    field("d-next", "Next fire (UTC)", "next_run_at", input("d-next", "next_run_at", toLocalInput(current || new Date(Date.now() + 3600 * 1000)), 'type="datetime-local" step="1" required')),
  "Reschedule", async (form) => {
    await api("POST", path(name, "reschedule"), { next_run_at: toISO(form.elements["d-next"].value) });
    after();
  });
}

export function deleteDialog(name, after) {
  dialog("Delete " + name + "?",
    "<p>The schedule, its runs and its workflow go; events it already published stay. This cannot be undone.</p>" +
    field("d-confirm", "Type the schedule's name to confirm", "confirm", input("d-confirm", "confirm", "", 'autocomplete="off" required')),
  "Delete", async (form) => {
    if (form.elements["d-confirm"].value !== name) {
      throw Object.assign(new Error("type " + name + " to confirm"), { field: "confirm" });
    }
    await api("DELETE", path(name));
    after();
  });
}
