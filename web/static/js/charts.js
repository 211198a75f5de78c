// Charts with uPlot (web/static/vendor/uplot, loaded as a classic script before the app):
// one chart per element, kept on it across live refreshes and given new data in place.

const colors = { fired: "#3b82f6", late: "#f59e0b", missed: "#b91c1c", skipped: "#6b7280", failed: "#dc2626", p50: "#16794c", p99: "#a15c00" };

function size(el) {
  return { width: Math.max(320, el.clientWidth || 600), height: 200 };
}

// timeSeries draws x (seconds since the epoch) against named series: kind "bars" or "line".
// label says, for screen readers, what the chart shows (its figures are on the page too).
export function timeSeries(el, x, series, opts) {
  const data = [x].concat(series.map(s => s.values));
  el.setAttribute("role", "img");
  el.setAttribute("aria-label", opts.label);
  if (el._chart && el._chart._signature === series.map(s => s.label).join("|")) {
    el._chart.setData(data);
    return el._chart;
  }
  if (el._chart) el._chart.destroy();
  const bars = window.uPlot.paths.bars({ size: [0.7, 40] });
  const u = new window.uPlot({
    ...size(el),
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(max || 0, opts.minY || 1)] } },
    axes: [{}, { label: opts.yLabel || "", size: 60, values: opts.yFormat ? (u, vals) => vals.map(opts.yFormat) : undefined }],
    legend: { live: true },
    series: [{ label: "time", value: (u, v) => v === null ? "–" : new Date(v * 1000).toISOString().slice(11, 19) + "Z" }].concat(series.map(s => ({
      label: s.label,
      stroke: colors[s.color] || s.color,
      fill: s.kind === "bars" ? (colors[s.color] || s.color) + "cc" : undefined,
      width: s.kind === "bars" ? 0 : 2,
      paths: s.kind === "bars" ? bars : undefined,
      // Counts draw plain lines; quantiles, often a lone value between gaps, show points.
      points: { show: s.kind === "line" && !!opts.yFormat, size: 5 },
      spanGaps: false,
      value: opts.yFormat ? (u, v) => v === null || v === undefined ? "–" : opts.yFormat(v) : undefined,
    }))),
  }, data, el);
  u._signature = series.map(s => s.label).join("|");
  el._chart = u;
  return u;
}

// Charts follow their element's width when the window is resized.
window.addEventListener("resize", () => {
  for (const el of document.querySelectorAll("[data-chart]")) {
    if (el._chart) el._chart.setSize(size(el));
  }
});
