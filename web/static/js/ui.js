// Small pieces every view shares: escaping, times and durations, status bars, dialogs and
// the live-refresh patching of a page's regions.
import { problemText } from "./api.js";

export const $ = (sel, root) => (root || document).querySelector(sel);
export const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

export function esc(s) {
  return String(s === null || s === undefined ? "" : s)
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

const dash = '<span class="muted">–</span>';

// when shows a time in UTC ("2026-11-25 12:00:00Z"), with the full value on hover.
export function when(t) {
  if (!t) return dash;
  const iso = new Date(t).toISOString();
  return '<time datetime="' + esc(iso) + '">' + esc(iso.replace("T", " ").replace(/\.\d+Z$/, "Z")) + "</time>";
}

// seconds shows a figure in seconds readably: 12 ms, 1.4 s, 3 min.
export function seconds(v) {
  if (v === null || v === undefined) return dash;
  const a = Math.abs(v);
  if (a < 1) return (v * 1000).toFixed(a < 0.01 ? 1 : 0) + " ms";
  if (a < 120) return v.toFixed(a < 10 ? 2 : 1) + " s";
  if (a < 7200) return (v / 60).toFixed(1) + " min";
  return (v / 3600).toFixed(1) + " h";
}

// ago says how long before now a time was, or how long after now it is.
export function relative(t, now) {
  if (!t) return "";
  const d = (new Date(t).getTime() - (now || Date.now())) / 1000;
  const s = seconds(Math.abs(d)).replace(" ms", " ms");
  return d >= 0 ? "in " + s : s + " ago";
}

export function num(n) { return (n || 0).toLocaleString("en-US"); }

// bar draws counts per status as one stacked bar with a legend; widths are applied by
// sizeBars through the CSSOM (the Content-Security-Policy refuses style attributes).
export function bar(counts, order, label) {
  const total = order.reduce((n, k) => n + (counts[k] || 0), 0);
  const summary = order.filter(k => counts[k]).map(k => k + " " + counts[k]).join(", ") || "none";
  let html = '<div class="bar" role="img" aria-label="' + esc((label ? label + ": " : "") + summary) + '" title="' + esc(summary) + '">';
  if (total > 0) {
    for (const k of order) {
      if (counts[k]) html += '<span class="seg-' + esc(k) + '" data-width="' + (100 * counts[k] / total) + '"></span>';
    }
  }
  html += '</div><div class="legend">';
  for (const k of order) if (counts[k]) html += '<span class="status-' + esc(k) + '">' + esc(k) + " " + counts[k] + "</span>";
  return html + "</div>";
}

// sizeBars applies data-width / data-left (percent) as styles: CSSOM, which the policy allows.
export function sizeBars(root) {
  for (const el of $$("[data-width]", root)) el.style.width = el.dataset.width + "%";
  for (const el of $$("[data-left]", root)) el.style.left = el.dataset.left + "%";
}

// waitingCause describes a PENDING task's waiting cause ({"reason": "version", "blocked_by_task": 7}).
export function waitingCause(c) {
  if (!c) return "";
  if (typeof c !== "object") return esc(c);
  // The progressive gates' causes say themselves ("wave 2 waits: bake ends 14:05 UTC").
  if (c.message) return '<span class="cause-message" data-reason="' + esc(c.reason || "") + '">' + esc(c.message) + "</span>";
  const rest = Object.keys(c).filter(k => k !== "reason").map(k => esc(k.replace(/_/g, " ")) + " " + esc(c[k]));
  return "<strong>" + esc(String(c.reason || "").replace(/_/g, " ")) + "</strong>" + (rest.length ? " (" + rest.join(", ") + ")" : "");
}

// showProblem puts an API error where the user looks: beside the field it names when the
// form has one (data-field), and in the form's or page's alert line otherwise.
export function showProblem(e, scope) {
  const root = scope || document;
  for (const el of $$("[aria-invalid=true]", root)) el.removeAttribute("aria-invalid");
  for (const el of $$(".field-error", root)) el.textContent = "";
  const alert = $(".form-error", root) || $("#error");
  if (!e) { if (alert) alert.textContent = ""; return; }
  const field = e.field || "";
  let input = field && $('[data-field="' + CSS.escape(field) + '"]', root);
  // "spec.interval.every" may be shown by the input of "spec.interval".
  for (let f = field; !input && f.includes("."); ) {
    f = f.slice(0, f.lastIndexOf("."));
    input = $('[data-field="' + CSS.escape(f) + '"]', root);
  }
  if (input) {
    input.setAttribute("aria-invalid", "true");
    const slot = $("#" + CSS.escape(input.id + "-error"), root);
    if (slot) slot.textContent = problemText(e);
  }
  if (alert) alert.textContent = problemText(e);
}

// dialog opens a modal <dialog> holding a form; onSubmit(form) runs on submit and closes
// the dialog when it resolves, or shows the API's problem inside it when it throws.
export function dialog(title, bodyHTML, submitLabel, onSubmit) {
  const d = document.createElement("dialog");
  d.setAttribute("aria-labelledby", "dialog-title");
  d.innerHTML = '<form method="dialog" novalidate><h3 id="dialog-title">' + esc(title) + "</h3>" + bodyHTML +
    '<p class="form-error error" role="alert"></p><div class="actions"><button type="submit" class="primary">' + esc(submitLabel) +
    '</button> <button type="button" class="cancel">Cancel</button></div></form>';
  document.body.appendChild(d);
  const form = $("form", d);
  $(".cancel", d).addEventListener("click", () => d.close());
  d.addEventListener("close", () => d.remove());
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = $("button[type=submit]", form);
    button.disabled = true;
    try {
      await onSubmit(form);
      d.close();
    } catch (e) {
      showProblem(e, form);
    } finally {
      button.disabled = false;
    }
  });
  d.showModal();
  const first = $("input, select, textarea", form) || $("button[type=submit]", form);
  if (first) first.focus();
  return d;
}

// field renders a labelled input whose errors show beside it; attrs is raw attribute text.
export function field(id, label, dataField, input, hint) {
  return '<div class="field"><label for="' + id + '">' + esc(label) + "</label>" + input +
    (hint ? '<small class="hint" id="' + id + '-hint">' + hint + "</small>" : "") +
    '<small class="field-error error" id="' + id + '-error" aria-live="polite"></small></div>';
}

export function input(id, dataField, value, attrs) {
  return '<input id="' + id + '" name="' + id + '" data-field="' + esc(dataField) + '" value="' + esc(value === undefined || value === null ? "" : value) +
    '" aria-describedby="' + id + '-error" ' + (attrs || "") + ">";
}

export function select(id, dataField, options, value) {
  return '<select id="' + id + '" name="' + id + '" data-field="' + esc(dataField) + '" aria-describedby="' + id + '-error">' +
    options.map(o => {
      const [v, l] = Array.isArray(o) ? o : [o, o];
      return '<option value="' + esc(v) + '"' + (v === value ? " selected" : "") + ">" + esc(l) + "</option>";
    }).join("") + "</select>";
}

// patchRegions brings each [data-region] of root to its markup in html and keeps the rest
// (charts, open disclosures, focus) as it is: how a live page refreshes. Within a region only
// what changed is replaced (patchChildren): a node whose markup is unchanged stays the same
// node, so a refresh never takes the button from under the user's pointer (a click pressed on
// the old node and released on its copy is lost) nor the text from a field being typed in.
// It answers false when a region of html is not on the page (the caller renders it anew).
export function patchRegions(root, html) {
  const next = document.createElement("template");
  next.innerHTML = html;
  sizeBars(next.content); // sized as on the page, so that an unchanged bar compares equal
  const focusedID = document.activeElement && document.activeElement.id;
  let changed = false;
  for (const region of $$("[data-region]", next.content)) {
    const cur = $('[data-region="' + CSS.escape(region.dataset.region) + '"]', root);
    if (!cur) { changed = true; continue; }
    // A disclosure the user opened (details[data-keep]) stays open across refreshes.
    for (const d of $$("details[open][data-keep]", cur)) {
      const twin = $('details[data-keep="' + CSS.escape(d.dataset.keep) + '"]', region);
      if (twin) twin.open = true;
    }
    patchChildren(cur, region);
  }
  if (focusedID && document.activeElement !== document.getElementById(focusedID)) {
    const el = document.getElementById(focusedID);
    if (el) el.focus();
  }
  return !changed;
}

// patchChildren makes cur's children those of next: a child whose markup is the same is kept,
// an element whose own tag and attributes are the same is patched in turn, anything else is
// replaced by its new version. When the children are more or fewer (a list that gained or
// lost rows) each unchanged element is kept wherever it moved, and the rest is new.
function patchChildren(cur, next) {
  const had = Array.from(cur.childNodes);
  const want = Array.from(next.childNodes);
  if (had.length !== want.length) {
    const unchanged = new Map();
    for (const x of had) {
      if (x.nodeType !== Node.ELEMENT_NODE) continue;
      if (!unchanged.has(x.outerHTML)) unchanged.set(x.outerHTML, []);
      unchanged.get(x.outerHTML).push(x);
    }
    cur.replaceChildren(...want.map(y => (y.nodeType === Node.ELEMENT_NODE && (unchanged.get(y.outerHTML) || []).shift()) || y));
    return;
  }
  for (let i = 0; i < had.length; i++) {
    const x = had[i], y = want[i];
    if (x.nodeType !== y.nodeType || x.nodeName !== y.nodeName) cur.replaceChild(y, x);
    else if (x.nodeType !== Node.ELEMENT_NODE) { if (x.nodeValue !== y.nodeValue) x.nodeValue = y.nodeValue; }
    else if (x.outerHTML === y.outerHTML) continue;
    else if (sameAttributes(x, y)) patchChildren(x, y);
    else cur.replaceChild(y, x);
  }
}

// sameAttributes tells whether two elements carry the same attributes with the same values.
function sameAttributes(a, b) {
  if (a.attributes.length !== b.attributes.length) return false;
  for (const { name, value } of a.attributes) {
    if (b.getAttribute(name) !== value) return false;
  }
  return true;
}

// toISO reads a datetime-local input's value as UTC.
export function toISO(v) {
  if (!v) return null;
  const d = new Date(v + (v.length === 16 ? ":00Z" : "Z"));
  return isNaN(d) ? v : d.toISOString().replace(/\.000Z$/, "Z");
}

// toLocalInput is a time as a datetime-local input's value (UTC, to the second).
export function toLocalInput(t) {
  return t ? new Date(t).toISOString().slice(0, 19) : "";
}

// pager renders Previous / Next for a cursor-paged list.
export function pager(id, hasPrev, nextCursor) {
  return '<nav class="pager" aria-label="pages"><button type="button" id="' + id + '-prev"' + (hasPrev ? "" : " disabled") +
    '>← Previous</button> <button type="button" id="' + id + '-next"' + (nextCursor ? "" : " disabled") + ">Next →</button></nav>";
}

// hashQuery reads the query part of the route (#runs?status=MISSED → {status: "MISSED"}).
export function hashQuery() {
  const i = location.hash.indexOf("?");
  return new URLSearchParams(i >= 0 ? location.hash.slice(i + 1) : "");
}

// setHashQuery rewrites the route's query without adding to history.
export function setHashQuery(params) {
  const base = location.hash.split("?")[0] || "#";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  history.replaceState(null, "", base + (s ? "?" + s : ""));
}

// The Temporal Web UI (config.js: TICKGATE_TEMPORAL_UI and the namespace): a link to a
// workflow, or to the workflows a visibility query finds.
const temporal = window.TICKGATE || { temporalUI: "", namespace: "default" };

export function temporalLink(workflowID) {
  if (!temporal.temporalUI) return "";
  const url = temporal.temporalUI + "/namespaces/" + encodeURIComponent(temporal.namespace) + "/workflows/" + encodeURIComponent(workflowID);
  return ' <a class="temporal" target="_blank" rel="noopener" href="' + esc(url) + '">Temporal ↗</a>';
}

export function temporalQuery(query) {
  if (!temporal.temporalUI) return "";
  const url = temporal.temporalUI + "/namespaces/" + encodeURIComponent(temporal.namespace) + "/workflows?query=" + encodeURIComponent(query);
  return ' <a class="temporal" target="_blank" rel="noopener" href="' + esc(url) + '">Temporal ↗</a>';
}

// The trace viewer (config.js: TICKGATE_TRACE_URL_TEMPLATE, {trace_id} in it): a link to the
// trace a run's fire recorded, when tracing was on and the viewer is known.
export function traceLink(traceID) {
  if (!traceID || !temporal.traceURL) return "";
  const url = temporal.traceURL.split("{trace_id}").join(encodeURIComponent(traceID));
  return ' <a class="trace" target="_blank" rel="noopener" href="' + esc(url) + '">trace ↗</a>';
}
