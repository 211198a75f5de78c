// The HTTP action in the console (docs/schedules.md "HTTP action"): its form fields and
// retry policy, a run's delivery attempts and redrives, the redrive command and the
// signing secret, shown once.
import { api } from "./api.js";
import { $, dialog, esc, field, input, select, toISO, toLocalInput, when } from "./ui.js";

const methods = ["POST", "PUT", "PATCH", "DELETE", "GET"];

function json(v) { return v === undefined || v === null ? "" : JSON.stringify(v, null, 2); }

// httpFields are the http action's inputs (act: the stored action, when editing).
export function httpFields(act) {
  const a = act && act.kind === "http" ? act : {};
  return '<div id="http-fields">' + field("f-url", "URL", "action.url", input("f-url", "action.url", a.url || "", 'type="url" autocomplete="off" spellcheck="false" placeholder="https://example.com/hook"'),
    "each tick sends one signed request here; loopback and private addresses are refused unless TICKGATE_HTTP_ALLOW lists them") +
    '<div class="row">' + field("f-method", "Method", "action.method", select("f-method", "action.method", methods, a.method || "POST")) +
    field("f-http-timeout", "Timeout per attempt", "action.timeout", input("f-http-timeout", "action.timeout", a.timeout || "10s", 'autocomplete="off"')) + "</div>" +
    field("f-headers", "Headers (JSON object, optional)", "action.headers", '<textarea id="f-headers" name="f-headers" data-field="action.headers" rows="2" aria-describedby="f-headers-error">' + esc(json(a.headers)) + "</textarea>",
      "header values are write-only: they are stored apart and never shown again") +
    ((a.header_names || []).length ? field("f-header-names", "Keep the stored values of", "action.header_names",
      input("f-header-names", "action.header_names", (a.header_names || []).join(", "), 'autocomplete="off" spellcheck="false"'),
      "header names, comma-separated: each keeps the value stored for it; remove a name to drop that header, or give it in Headers to set a new value") : "") +
    field("f-body", "Body (JSON, optional)", "action.body", '<textarea id="f-body" name="f-body" data-field="action.body" rows="3" aria-describedby="f-body-error">' + esc(json(a.body)) + "</textarea>",
      "an object or array is sent as JSON, a string as its text") + "</div>";
}

// retryFields are the retry policy's inputs, for http and workflow actions.
export function retryFields(retry) {
  const r = retry || {};
  return '<fieldset id="retry-fields" data-field="retry" aria-describedby="retry-error"><legend>Retry (http and workflow actions)</legend>' +
    '<small class="field-error error" id="retry-error" aria-live="polite"></small><div class="row">' +
    field("f-max-attempts", "Max attempts", "retry.max_attempts", input("f-max-attempts", "retry.max_attempts", r.max_attempts || "", 'type="number" min="1" max="185" placeholder="3"')) +
    field("f-max-age", "Max age", "retry.max_age", input("f-max-age", "retry.max_age", r.max_age || "", 'autocomplete="off" placeholder="24h"')) + "</div><div class=\"row\">" +
    field("f-initial-backoff", "Initial backoff", "retry.initial_backoff", input("f-initial-backoff", "retry.initial_backoff", r.initial_backoff || "", 'autocomplete="off" placeholder="1s"')) +
    field("f-max-backoff", "Max backoff", "retry.max_backoff", input("f-max-backoff", "retry.max_backoff", r.max_backoff || "", 'autocomplete="off" placeholder="1m"')) +
    '</div><small class="hint">Empty: an http action takes the defaults; a workflow action runs once.</small></fieldset>';
}

// readHTTP reads the http action from the form (parse reads a JSON field, naming it).
export function readHTTP(v, parse) {
  const action = { kind: "http", url: v("f-url"), method: v("f-method") };
  if (v("f-http-timeout")) action.timeout = v("f-http-timeout");
  const headers = parse("f-headers", "action.headers");
  if (headers !== undefined) action.headers = headers;
  const keptField = document.getElementById("f-header-names"); // only when editing an action with stored headers
  const kept = keptField ? keptField.value.split(",").map(n => n.trim()).filter(n => n) : [];
  if (kept.length) action.header_names = kept;
  const body = parse("f-body", "action.body");
  if (body !== undefined) action.body = body;
  return action;
}

// readRetry reads the retry policy (null: none given).
export function readRetry(v) {
  const r = {};
  if (v("f-max-attempts")) r.max_attempts = Number(v("f-max-attempts"));
  for (const [k, id] of [["max_age", "f-max-age"], ["initial_backoff", "f-initial-backoff"], ["max_backoff", "f-max-backoff"]]) if (v(id)) r[k] = v(id);
  return Object.keys(r).length ? r : null;
}

export function retryText(r) {
  if (!r) return "none: it runs once";
  return esc(r.max_attempts) + " attempts at most, within " + esc(r.max_age) + "; waits from " + esc(r.initial_backoff) + " doubling to " + esc(r.max_backoff) +
    " (or as a Retry-After asks)";
}

// attempts shows a run's delivery attempts and redrives: their count, opened on demand.
export function attempts(r) {
  const as = r.attempts || [];
  const rs = r.redrives || [];
  if (!as.length && !rs.length) return '<span class="muted">–</span>';
  let html = '<details class="attempts" data-keep="attempts-' + r.id + '"><summary>' + as.length + " attempt" + (as.length === 1 ? "" : "s") +
    (rs.length ? ", " + rs.length + " redrive" + (rs.length === 1 ? "" : "s") : "") + "</summary>";
  if (as.length) {
    html += '<table class="compact"><thead><tr><th scope="col">Series</th><th scope="col">#</th><th scope="col">At</th><th scope="col">Status</th><th scope="col">Took</th><th scope="col">Outcome</th><th scope="col">Answer</th></tr></thead><tbody>' +
      as.map(a => "<tr><td>" + (a.redrive ? "redrive " + a.redrive : "first") + "</td><td>" + a.attempt + "</td><td>" + when(a.started_at) + "</td><td>" +
        (a.status_code === null || a.status_code === undefined ? '<span class="muted">no answer</span>' : a.status_code) + "</td><td>" + a.latency_ms + " ms</td><td>" + esc(a.outcome) +
        (a.retry_after_ms ? " · Retry-After " + (a.retry_after_ms / 1000) + " s" : "") + '</td><td class="reason">' + esc(a.error || "") +
        (a.response_start ? ' <code>' + esc(a.response_start.slice(0, 120)) + "</code>" : "") + "</td></tr>").join("") + "</tbody></table>";
  }
  if (rs.length) {
    html += '<ul class="compact">' + rs.map(d => "<li>redrive " + d.n + " at " + when(d.requested_at) + ' after: <span class="reason">' + esc(d.previous_error) + "</span></li>").join("") + "</ul>";
  }
  return html + "</details>";
}

// redriveButton is offered on a FAILED run of an http or workflow action.
export function redriveButton(r) {
  if (r.status !== "FAILED" || !r.workflow_id) return "";
  return ' <button type="button" class="redrive" data-redrive="' + r.id + '">Redrive</button>';
}

// onRedrive handles a click on a Redrive button; done(message) reports the outcome.
export async function onRedrive(ev, done) {
  const b = ev.target.closest("button[data-redrive]");
  if (!b) return false;
  b.disabled = true;
  try {
    const run = await api("POST", "/runs/" + encodeURIComponent(b.dataset.redrive) + "/redrive", {});
    done("Run " + run.id + " redriven: " + run.status + " as " + run.workflow_id + ".");
  } catch (e) {
    done((e.field ? e.field + ": " : "") + e.message);
  }
  return true;
}

// showSecret shows a signing secret once, in a dialog; after runs when it closes.
export function showSecret(name, secret, after) {
  const d = dialog("Signing secret of " + name,
    "<p><strong>Shown this once.</strong> Keep it where the receiver verifies requests (Standard Webhooks: docs/webhooks.md); rotate it if it is lost.</p>" +
    field("secret-value", "Secret", "secret", '<input id="secret-value" readonly value="' + esc(secret) + '" size="72">'),
    "Done", async () => {});
  $(".cancel", d).hidden = true;
  d.addEventListener("close", () => { if (after) after(); });
  $("#secret-value", d).select();
}

// rotateDialog asks to rotate a schedule's signing secret, then shows the new one.
export function rotateDialog(name, after) {
  dialog("Rotate the signing secret of " + name + "?",
    "<p>Requests are signed with a new secret from now on; the receiver must verify with it. The new one is shown once.</p>" +
    field("f-grace", "Keep the old secret signing for", "grace", input("f-grace", "grace", "", 'autocomplete="off" placeholder="0s"'),
      "a grace period (up to 168h): both secrets sign each request meanwhile, so the receiver can switch without refusing one"),
    "Rotate", async (d) => {
      const grace = (($("#f-grace", d) || {}).value || "").trim();
      const s = await api("POST", "/schedules/" + encodeURIComponent(name) + "/secret", grace ? { grace } : {});
      setTimeout(() => showSecret(name, s.signing_secret, after), 0);
    });
}

// redriveRangeDialog redrives every dead-lettered run of a range of ticks (POST
// /runs/redrive), of the schedules a label selector reaches: a page at a time until none
// remains, the dialog showing how far it got; done reports the counts.
export function redriveRangeDialog(done) {
  const now = new Date();
  const dayAgo = new Date(now.getTime() - 24 * 3600 * 1000);
  dialog("Redrive the dead letter of a range",
    "<p>Every FAILED run of an http or workflow action whose tick lies in the range is delivered again (the same tick key, a new series of attempts), a hundred a request. Times are UTC.</p>" +
    field("d-rr-selector", "Schedules (label selector, empty: all)", "selector", input("d-rr-selector", "selector", "", 'placeholder="team=billing"')) +
    field("d-rr-since", "Ticks from", "since", input("d-rr-since", "since", toLocalInput(dayAgo.toISOString()), 'type="datetime-local" step="1"')) +
    field("d-rr-until", "Until (not included)", "until", input("d-rr-until", "until", toLocalInput(now.toISOString()), 'type="datetime-local" step="1"')) +
    '<p id="d-rr-progress" class="muted" aria-live="polite"></p>',
  "Redrive", async (form) => {
    let req = { since: toISO(form.elements["d-rr-since"].value), until: toISO(form.elements["d-rr-until"].value) };
    const sel = form.elements["d-rr-selector"].value.trim();
    if (sel) req.selector = sel;
    const progress = $("#d-rr-progress", form);
    let res;
    for (;;) {
      res = await api("POST", "/runs/redrive", req);
      progress.textContent = res.redriven + " redriven, " + res.skipped + " skipped of " + res.matched + "; " + res.remaining + " remaining";
      if (res.done || !res.continue) break;
      req = { continue: res.continue };
    }
    done("Redrive of the range: " + res.redriven + " redriven, " + res.skipped + " skipped of " + res.matched + " matched.");
  });
}
