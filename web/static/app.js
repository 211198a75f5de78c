// tickgate console: plain JavaScript modules over the /api/v1 JSON API (no framework, no
// build step, no CDN). Routes live in the URL's hash; live pages refresh their regions in
// place every few seconds. docs/console.md describes the pages.
import { ApiError, problemText, setToken, token } from "./js/api.js";
import { $, $$, esc, patchRegions, sizeBars } from "./js/ui.js";
import { overview } from "./js/overview.js";
import { scheduleList } from "./js/schedules.js";
import { schedulePage } from "./js/schedule.js";
import { scheduleForm } from "./js/schedule_form.js";
import { runList } from "./js/runs.js";
import { calendarList, calendarPage } from "./js/calendars.js";
import { rolloutList, rolloutPage } from "./js/rollouts.js";
import { pcList, pcPage, taskList, taskPage } from "./js/devices.js";
import { freezePage, mountFreezeBanner, refreshFreezeBanner } from "./js/freeze.js";

// Each route: a pattern over the hash path, the nav tab it belongs to, and its view. A view
// answers {title, html, mount(root, ctx), live}: live pages are refreshed in place, every
// REFRESH_MS or every live milliseconds when live is a number.
const routes = [
  [/^(overview)?$/, "overview", () => overview()],
  [/^schedules$/, "schedules", () => scheduleList()],
  [/^schedules\/new$/, "schedules", () => scheduleForm(null)],
  [/^schedule\/(.+)\/edit$/, "schedules", (name) => scheduleForm(name)],
  [/^schedule\/(.+)$/, "schedules", (name) => schedulePage(name)],
  [/^calendars$/, "calendars", () => calendarList()],
  [/^calendar\/(.+)$/, "calendars", (name) => calendarPage(name)],
  [/^runs$/, "runs", () => runList()],
  [/^rollouts$/, "rollouts", () => rolloutList()],
  [/^rollout\/(\d+)$/, "rollouts", (id) => rolloutPage(id)],
  [/^pcs$/, "pcs", () => pcList()],
  [/^pc\/(.+)$/, "pcs", (name) => pcPage(name)],
  [/^tasks$/, "tasks", () => taskList()],
  [/^task\/(\d+)$/, "tasks", (id) => taskPage(id)],
  [/^freeze$/, "", () => freezePage()],
];

function notFound(path) {
  return {
    title: "Not found",
    html: '<h2 tabindex="-1">Not found</h2><p>Nothing lives at <code>#' + esc(path) +
      '</code>. Try the <a href="#overview">overview</a> or the <a href="#schedules">schedules</a>.</p>',
  };
}

function currentRoute() {
  const path = decodeURIComponent(location.hash.replace(/^#/, "").split("?")[0]);
  for (const [re, tab, view] of routes) {
    const m = path.match(re);
    if (m) return { path, tab, make: () => view(...m.slice(1).filter(x => x !== undefined && x !== "overview")) };
  }
  return { path, tab: "", make: () => notFound(path) };
}

let shown = { key: null, live: false, controller: null, at: 0 };
let refreshTimer = null;
const REFRESH_MS = 3000;

async function render(refresh) {
  const view = $("#view");
  if (!token()) {
    $("#login").hidden = false; view.hidden = true; $("#nav").hidden = true; $("#logout").hidden = true;
    $("#freeze-banner").hidden = true;
    $("#updated").textContent = "";
    return;
  }
  // Every page says whether a freeze holds (and has the button).
  refreshFreezeBanner();
  $("#login").hidden = true; view.hidden = false; $("#nav").hidden = false; $("#logout").hidden = false;
  const route = currentRoute();
  for (const a of $$("#nav a")) {
    const active = a.dataset.tab === route.tab;
    a.classList.toggle("active", active);
    if (active) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const key = location.hash;
  try {
    const out = await route.make();
    if (key !== location.hash) return; // the user moved on meanwhile
    const inPlace = refresh && shown.key === key && out.live;
    if (!(inPlace && patchRegions(view, out.html))) {
      if (shown.controller) shown.controller.abort();
      const controller = new AbortController();
      // A filter that changed the route keeps the focus of the control the user was in.
      const focusedID = document.activeElement && view.contains(document.activeElement) ? document.activeElement.id : "";
      view.innerHTML = out.html;
      sizeBars(view);
      if (out.mount) out.mount(view, { signal: controller.signal, first: true, rerender: () => render(true) });
      if (!refresh) {
        const h = $("h2", view);
        if (h) { h.setAttribute("tabindex", "-1"); h.focus({ preventScroll: true }); }
      } else if (focusedID && document.getElementById(focusedID)) {
        document.getElementById(focusedID).focus();
      }
      shown = { key, live: out.live, controller, at: 0 };
    } else if (out.mount) {
      out.mount(view, { signal: shown.controller.signal, first: false, rerender: () => render(true) });
    }
    shown.live = out.live;
    shown.at = Date.now();
    document.title = (out.title ? out.title + " · " : "") + "tickgate";
    $("#updated").textContent = out.live ? "updated " + new Date().toISOString().slice(11, 19) + "Z" : "";
    $("#error").textContent = "";
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      setToken("");
      $("#login-error").textContent = "Token refused: " + problemText(e);
      return render(false);
    }
    $("#error").textContent = problemText(e);
  }
}

function loop() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => {
    // A dialog open or the tab hidden: nothing to refresh under the user's hands.
    const every = typeof shown.live === "number" ? shown.live : REFRESH_MS;
    if (shown.live && Date.now() - shown.at >= every - 100 && !document.hidden && !$("dialog[open]")) await render(true);
    loop();
  }, REFRESH_MS);
}

$("#login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  setToken($("#token").value.trim());
  $("#token").value = "";
  $("#login-error").textContent = "";
  await render(false);
});
$("#logout").addEventListener("click", () => { setToken(""); render(false); });
mountFreezeBanner(() => render(true));
window.addEventListener("hashchange", () => render(false));
render(false).then(loop);
