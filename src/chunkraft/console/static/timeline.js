// chunkraft console: the chunk timeline of one partition as SVG, from the geometry the
// controller computes (console/timeline.py). Written for this project; console.js draws with it.
"use strict";

(() => {
  const LABEL = 90; const ROW = 16; const GAP = 8; const AXIS = 28;
  const esc = (value) => String(value).replace(/[&<>"']/g, (c) => (
    { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const time = (ms) => (ms >= 0 ? new Date(ms).toISOString().replace(".000Z", "Z") : "unknown");

  function timelineSvg(t, width) {
    const plot = width - LABEL - 12;
    let y = AXIS;
    const laneTop = {};
    let lanes = "";
    for (const lane of t.lanes) {
      laneTop[lane.broker_id] = y;
      const height = lane.rows * ROW + GAP;
      const note = !lane.registered ? " (unregistered)" : lane.fenced ? " (fenced)" : "";
      lanes += `<g class="lane" data-broker="${lane.broker_id}"><rect class="lane-bg" x="0" y="${y}"
        width="${width}" height="${height}"></rect><text class="lane-label" x="6" y="${y + 13}">
        broker ${lane.broker_id}${esc(note)}</text></g>`;
      y += height;
    }
    const span = t.axis_end - t.axis_start;
    let axis = "";
    for (let i = 0; i <= 4; i += 1) {
      const x = LABEL + (plot * i) / 4;
      const offset = Math.round(t.axis_start + (span * i) / 4);
      const label = i === 4 ? "→" : String(offset);
      axis += `<line class="tick" x1="${x}" x2="${x}" y1="${AXIS - 4}" y2="${y}"></line>
        <text class="tick-label" x="${x + 2}" y="${AXIS - 8}">${label}</text>`;
    }
    const known = LABEL + plot * ((t.known_end - t.axis_start) / span);
    axis += `<line class="known-end" x1="${known}" x2="${known}" y1="${AXIS - 4}" y2="${y}"></line>`;
    const parts = [];
    for (const b of t.bars) {
      const top = laneTop[b.broker_id] + GAP / 2 + b.row * ROW;
      const x0 = LABEL + b.x0 * plot;
      const w = Math.max(3, (b.x1 - b.x0) * plot);
      const classes = ["bar", b.active ? "active" : "inactive"];
      if (b.leader) classes.push("leader");
      if (b.adding) classes.push("adding");
      if (b.removing) classes.push("removing");
      if (!b.in_sync) classes.push("out-of-sync");
      const range = b.active ? `${b.start_offset}– (active)`
        : `${b.start_offset}–${b.stop_offset}${b.end_offset !== b.stop_offset ? `, holds to ${b.end_offset}` : ""}`;
      const roles = [b.leader ? "leader" : "", b.adding ? "being added (move in progress)" : "",
        b.removing ? "being removed (move in progress)" : "", b.in_sync ? "" : "not in sync"]
        .filter(Boolean).join(", ");
      const title = `chunk ${range} on broker ${b.broker_id}${roles ? ` (${roles})` : ""}; `
        + `epoch ${b.epoch}; StartTimestamp ${time(b.start_timestamp)}`;
      let bar = `<g class="${classes.join(" ")}" data-start="${b.start_offset}"
        data-broker="${b.broker_id}" data-active="${b.active}"><title>${esc(title)}</title>
        <rect x="${x0}" y="${top + 1}" width="${w}" height="${ROW - 3}" rx="2"></rect>`;
      if (!b.active && b.x1 > b.x_stop) {
        const xs = LABEL + b.x_stop * plot;
        bar += `<rect class="overlap" x="${xs}" y="${top + 1}" width="${Math.max(2, LABEL + b.x1 * plot - xs)}"
          height="${ROW - 3}"></rect>`;
      }
      if (b.leader) bar += `<text class="leader-mark" x="${x0 + 4}" y="${top + ROW - 4}">★ leader</text>`;
      parts.push(`${bar}</g>`);
    }
    return `<svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="${width}"
      height="${y + 4}" viewBox="0 0 ${width} ${y + 4}" role="img"
      aria-label="chunk timeline of ${esc(t.topic)}-${t.partition_id}">
      <defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse"
      patternTransform="rotate(45)"><rect width="3" height="6" class="hatch"></rect></pattern></defs>
      ${lanes}${axis}${parts.join("")}</svg>`;
  }

  window.chunkraftTimelineSvg = timelineSvg;
})();
