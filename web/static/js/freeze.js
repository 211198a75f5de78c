// The freeze (docs/progressive.md): a banner on every page saying whether nothing may start
// — the global freeze in force, who set it, when and why, with the button that lifts it, or
// the button that sets one — and a page with the freezes in force and their history.
import { api } from "./api.js";
import { $, dialog, esc, field, when } from "./ui.js";

// freezeBannerHTML is the banner's markup for GET /freeze's answer.
export function freezeBannerHTML(st) {
  const f = st && st.frozen;
  if (f) {
    return '<div class="freeze-on" role="status" id="freeze-state" data-frozen="true"><strong>Frozen</strong> since ' + when(f.frozen_at) +
      " by " + esc(f.frozen_by) + ": <q>" + esc(f.reason) + "</q> — nothing new starts in any rollout or device task; work in flight finishes. " +
      '<button type="button" id="freeze-lift">Lift freeze…</button> <a href="#freeze">History</a></div>';
  }
  const some = st && st.rollouts_frozen && st.rollouts_frozen.length;
  return '<div class="freeze-off" id="freeze-state" data-frozen="false"><button type="button" id="freeze-set" class="danger">Freeze everything…</button> ' +
    (some ? '<span class="muted">' + some + " rollout" + (some > 1 ? "s" : "") + " frozen</span> " : "") + '<a href="#freeze">Freeze history</a></div>';
}

// refreshFreezeBanner reads the freeze and redraws the banner when it changed.
export async function refreshFreezeBanner() {
  const el = $("#freeze-banner");
  if (!el) return;
  let st;
  try { st = await api("GET", "/freeze"); } catch (e) { return; }
  const html = freezeBannerHTML(st);
  if (el.innerHTML !== html) el.innerHTML = html;
  el.hidden = false;
}

// mountFreezeBanner wires the banner's buttons once; after a change it calls onChange.
export function mountFreezeBanner(onChange) {
  const el = $("#freeze-banner");
  el.addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (!b) return;
    if (b.id === "freeze-set") {
      dialog("Freeze everything?", "<p>No rollout task and no device execution starts until the freeze is lifted; work in flight finishes. " +
        "Who froze, when and why is kept.</p>" + field("freeze-reason", "Why", "reason",
          '<textarea id="freeze-reason" data-field="reason" rows="2" required aria-describedby="freeze-reason-error"></textarea>'), "Freeze", async (form) => {
        await api("POST", "/freeze", { reason: $("#freeze-reason", form).value });
        await refreshFreezeBanner();
        onChange();
      });
    } else if (b.id === "freeze-lift") {
      dialog("Lift the freeze?", "<p>Work starts again where the gates allow it.</p>", "Lift freeze", async () => {
        await api("DELETE", "/freeze");
        await refreshFreezeBanner();
        onChange();
      });
    }
  });
}

function freezeRows(list) {
  let html = '<table class="freezes"><thead><tr><th scope="col">ID</th><th scope="col">Scope</th><th scope="col">Why</th><th scope="col">Frozen by</th><th scope="col">Frozen at</th>' +
    '<th scope="col">Lifted by</th><th scope="col">Lifted at</th></tr></thead><tbody>';
  for (const f of list) {
    const scope = f.scope === "rollout" ? '<a href="#rollout/' + f.rollout_id + '">rollout ' + f.rollout_id + "</a>" : "everything";
    html += '<tr data-freeze="' + f.id + '"><td>' + f.id + "</td><td>" + scope + "</td><td>" + esc(f.reason) + "</td><td>" + esc(f.frozen_by) + "</td><td>" +
      when(f.frozen_at) + "</td><td>" + (f.lifted_by ? esc(f.lifted_by) : '<strong class="state-paused">in force</strong>') + "</td><td>" + when(f.lifted_at) + "</td></tr>";
  }
  return html + "</tbody></table>";
}

// freezePage is #freeze: the global freeze in force, the rollouts frozen one by one, and
// the history of the global freezes.
export async function freezePage() {
  const st = await api("GET", "/freeze");
  let html = '<h2>Freeze</h2><div data-region="freeze">';
  html += st.frozen ? '<p class="freeze-now"><strong>Frozen</strong> since ' + when(st.frozen.frozen_at) + " by " + esc(st.frozen.frozen_by) + ": " + esc(st.frozen.reason) + "</p>"
    : '<p class="freeze-now">Not frozen: work starts wherever the gates allow it.</p>';
  html += '<section class="panel"><h3>Rollouts frozen</h3>' + (st.rollouts_frozen.length ? freezeRows(st.rollouts_frozen) : '<p class="muted">None.</p>') + "</section>";
  html += '<section class="panel"><h3 id="freeze-history-title">History</h3>' + (st.history.length ? freezeRows(st.history) : '<p class="muted">Never frozen.</p>') + "</section></div>";
  return { title: "Freeze", html, live: true };
}

