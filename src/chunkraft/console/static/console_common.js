// chunkraft console: what every page's script shares. The session's CSRF token and cluster
// id, fetching /ui/api, changes through the REST v3 API (the session cookie and the CSRF token),
// following the metadata log through /ui/api/events, and small HTML helpers. Exposed as
// window.chunkraftConsole for console.js and topic_page.js. Written for this project.
"use strict";

(() => {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? "";
  const csrf = meta("csrf-token");
  const clusterId = meta("cluster-id");
  const body = document.body;
  const main = document.getElementById("main");
  const timings = (window.consoleTimings = {});

  // ------------------------------------------------------------------ helpers

  const esc = (value) => String(value).replace(/[&<>"']/g, (c) => (
    { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const list = (ids) => (ids.length ? ids.join(", ") : "–");
  const bytes = (n) => {
    if (n === null || n === undefined) return "n/a";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
  };

  function toLogin() {
    location.assign(`/ui/login?next=${encodeURIComponent(location.pathname + location.search)}`);
  }

  async function getJson(path) {
    const answer = await fetch(path, { headers: { Accept: "application/json" },
      credentials: "same-origin" });
    if (answer.status === 401) { toLogin(); throw new Error("logged out"); }
    let data = null;
    try { data = await answer.json(); } catch (e) { data = null; }
    return { status: answer.status, data, offset: Number(answer.headers.get("X-Metadata-Offset")) };
  }

  // A change, through REST v3 only: the session cookie goes along, the CSRF token in a header.
  async function v3(method, path, payload) {
    const answer = await fetch(`/v3/clusters/${encodeURIComponent(clusterId)}${path}`, {
      method, credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf,
        Accept: "application/json" },
      body: payload === undefined ? undefined : JSON.stringify(payload),
    });
    if (answer.status === 401) { toLogin(); throw new Error("logged out"); }
    let data = null;
    try { data = await answer.json(); } catch (e) { data = null; }
    return { status: answer.status, data, offset: Number(answer.headers.get("X-Metadata-Offset")) };
  }

  const kafkaError = (data) => (data
    ? `${data.error_name} (${data.error_code}): ${data.message ?? data.error_message ?? ""}`
    : "no answer");

  function html(target, text) { target.innerHTML = text; return target; }

  // Runs fn at most once per `gap` ms, and once more after a call that came in between.
  function throttle(fn, gap) {
    let running = false; let again = false; let last = 0;
    const run = async () => {
      if (running) { again = true; return; }
      running = true;
      const wait = Math.max(0, last + gap - Date.now());
      if (wait) await new Promise((r) => setTimeout(r, wait));
      try { await fn(); } finally {
        last = Date.now(); running = false;
        if (again) { again = false; run(); }
      }
    };
    return run;
  }

  // ------------------------------------------------------------------ live updates

  const liveBadge = document.getElementById("live");
  let liveOffset = -1;

  function follow(onChange) {
    const source = new EventSource("/ui/api/events");
    source.addEventListener("change", (event) => {
      const change = JSON.parse(event.data);
      const first = liveOffset < 0;
      liveOffset = Math.max(liveOffset, change.offset);
      if (liveBadge) {
        liveBadge.textContent = `live · offset ${liveOffset}`;
        liveBadge.classList.add("on");
      }
      if (!first) onChange(change);
    });
    source.addEventListener("error", () => liveBadge?.classList.remove("on"));
  }

  document.getElementById("logout")?.addEventListener("click", async () => {
    await fetch("/ui/logout", { method: "POST", headers: { "X-CSRF-Token": csrf },
      credentials: "same-origin" });
    location.assign("/ui/login");
  });

  function configTable(entries, keyed) {
    if (!entries.length) return "<p class=\"muted\">None.</p>";
    let text = "<table class=\"configs\"><thead><tr><th>Name</th><th>Value</th><th>Source</th>"
      + "</tr></thead><tbody>";
    for (const c of entries) {
      const cls = c.is_default ? " class=\"muted\"" : "";
      text += `<tr${cls}><td class="mono">${esc(c.name)}</td><td class="mono">${esc(c.value ?? "")}</td>
        <td>${esc(c.source)}</td></tr>`;
    }
    return `${text}</tbody></table>${keyed ? "" : ""}`;
  }

  window.chunkraftConsole = { csrf, clusterId, body, main, timings, esc, list, bytes, toLogin,
    getJson, v3, kafkaError, html, throttle, follow, configTable };
})();
