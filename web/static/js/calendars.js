// Calendars: the days and ranges schedules exclude (docs/schedules.md "Calendars"). The list
// with a form to create one; a calendar's page with the schedules excluding it, its editor
// (an edit takes effect at once for every one of them) and its deletion.
import { api } from "./api.js";
import { $, esc, field, input, showProblem, when } from "./ui.js";

// calendarForm reads the form: dates one per line or comma-separated, ranges one
// "start/end" a line (RFC 3339 times or dates).
function calendarRequest(form) {
  const v = (id) => form.elements[id].value.trim();
  const dates = v("c-dates").split(/[\s,]+/).filter(d => d);
  const ranges = v("c-ranges").split("\n").map(l => l.trim()).filter(l => l).map(l => {
    const i = l.indexOf("/");
    return i < 0 ? { start: l, end: "" } : { start: l.slice(0, i).trim(), end: l.slice(i + 1).trim() };
  });
  return { timezone: v("c-timezone") || "UTC", dates, ranges };
}

function calendarFields(c, withName) {
  return (withName ? field("c-name", "Name", "name", input("c-name", "name", "", 'required maxlength="128" autocomplete="off"'), "letters, digits, '.', '_' or '-'") : "") +
    field("c-timezone", "Time zone", "timezone", input("c-timezone", "timezone", (c && c.timezone) || "UTC", 'autocomplete="off"'), "an IANA name: the zone its dates are days of") +
    field("c-dates", "Dates", "dates", '<textarea id="c-dates" name="c-dates" data-field="dates" rows="3" aria-describedby="c-dates-error">' +
      esc(((c && c.dates) || []).join("\n")) + "</textarea>", "whole days, one a line: 2026-12-25") +
    field("c-ranges", "Ranges", "ranges", '<textarea id="c-ranges" name="c-ranges" data-field="ranges" rows="3" aria-describedby="c-ranges-error">' +
      esc(((c && c.ranges) || []).map(r => r.start + "/" + r.end).join("\n")) + "</textarea>",
      "one a line, start/end: RFC 3339 times or dates (an end date includes its day)");
}

// problem shows the API's problem in the form; one naming an item of the dates or ranges
// ("ranges[2].end") is shown beside that text area too, the item named in the words.
function problem(e, form) {
  showProblem(e, form);
  const list = e && e.field && e.field.match(/^(dates|ranges)\[/);
  if (!list) return;
  const area = $("#c-" + list[1], form);
  area.setAttribute("aria-invalid", "true");
  $("#c-" + list[1] + "-error", form).textContent = e.field + ": " + e.message;
}

// flash is the outcome of the last edit, shown once the page is drawn again.
let flash = "";

export async function calendarList() {
  const page = await api("GET", "/calendars?limit=500");
  let html = '<h2>Calendars</h2><p class="muted">Days and ranges that schedules exclude with <code>exclude_calendars</code>: a tick a calendar excludes is recorded skipped, naming it.</p>';
  html += '<div data-region="list"><table id="calendars"><thead><tr><th scope="col">Name</th><th scope="col">Time zone</th><th scope="col">Dates</th><th scope="col">Ranges</th><th scope="col">Updated</th></tr></thead><tbody>';
  for (const c of page.items) {
    html += '<tr data-calendar="' + esc(c.name) + '"><td><a href="#calendar/' + encodeURIComponent(c.name) + '">' + esc(c.name) + "</a></td><td>" + esc(c.timezone) +
      "</td><td>" + c.dates.length + "</td><td>" + c.ranges.length + "</td><td>" + when(c.updated_at) + "</td></tr>";
  }
  html += "</tbody></table>" + (page.items.length ? "" : '<p class="muted" id="no-calendars">No calendars yet.</p>') + "</div>";
  html += '<section class="panel"><h3>New calendar</h3><form id="calendar-form" novalidate>' + calendarFields(null, true) +
    '<p class="form-error error" role="alert"></p><div class="actions"><button type="submit" class="primary" id="create-calendar">Create calendar</button></div></form></section>';
  return {
    title: "Calendars", html, live: true,
    mount(root, ctx) {
      if (!ctx.first) return;
      const form = $("#calendar-form", root);
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        try {
          const req = calendarRequest(form);
          req.name = form.elements["c-name"].value.trim();
          const c = await api("POST", "/calendars", req);
          location.hash = "#calendar/" + encodeURIComponent(c.name);
        } catch (e) {
          problem(e, form);
        }
      }, { signal: ctx.signal });
    },
  };
}

export async function calendarPage(name) {
  const enc = encodeURIComponent(name);
  const c = await api("GET", "/calendars/" + enc);
  const users = c.used_by || [];
  let html = '<div data-region="head"><h2><a href="#calendars">Calendars</a> / ' + esc(name) + "</h2></div>";
  html += '<p class="form-error error" role="alert" id="calendar-result">' + esc(flash) + "</p>";
  flash = "";
  html += '<div class="columns"><section class="panel" data-region="facts"><h3>Excludes</h3><dl class="facts">' +
    "<dt>Time zone</dt><dd>" + esc(c.timezone) + '</dd><dt>Dates</dt><dd id="calendar-dates">' + (c.dates.length ? c.dates.map(esc).join(", ") : '<span class="muted">none</span>') + "</dd>" +
    '<dt>Ranges</dt><dd id="calendar-ranges">' + (c.ranges.length ? c.ranges.map(r => esc(r.start) + " → " + esc(r.end)).join("<br>") : '<span class="muted">none</span>') + "</dd>" +
    '<dt>Version</dt><dd id="calendar-version">' + c.version + "</dd>" +
    '<dt>Excluded by</dt><dd id="calendar-users">' + (users.length ? users.map(s => '<a href="#schedule/' + encodeURIComponent(s) + '">' + esc(s) + "</a>").join(", ") +
      (c.used_by_count > users.length ? " and " + (c.used_by_count - users.length) + " more" : "") : '<span class="muted">no schedule</span>') + "</dd></dl>" +
    '<button type="button" id="delete-calendar" class="danger">Delete</button></section>';
  html += '<section class="panel"><h3>Edit</h3><p class="muted">Takes effect at once for every schedule excluding it, for every tick not yet released.</p>' +
    '<form id="calendar-form" novalidate>' + calendarFields(c, false) +
    '<p class="form-error error" role="alert"></p><div class="actions"><button type="submit" class="primary" id="save-calendar">Save</button></div></form></section></div>';
  return {
    title: name, html, live: false,
    mount(root, ctx) {
      const opts = { signal: ctx.signal };
      const form = $("#calendar-form", root);
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        try {
          const res = await api("PUT", "/calendars/" + enc, calendarRequest(form), { "If-Match": '"' + c.version + '"' });
          const r = res.rejudged || { skipped: 0, fired: 0 };
          flash = "Saved: " + r.skipped + " armed fire(s) now skipped, " + r.fired + " firing again.";
          ctx.rerender();
        } catch (e) {
          problem(e, form);
        }
      }, opts);
      $("#delete-calendar", root).addEventListener("click", async () => {
        try {
          await api("DELETE", "/calendars/" + enc);
          location.hash = "#calendars";
        } catch (e) {
          $("#calendar-result", root).textContent = e.message;
        }
      }, opts);
    },
  };
}
