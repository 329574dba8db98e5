// chunkraft console: fills the page shells of /ui from /ui/api, follows the metadata log
// through /ui/api/events, and makes every change through the REST v3 API with the session
// cookie and the CSRF token. Written for this project; no library, nothing fetched elsewhere.
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

  function section(title, id) {
    const element = document.createElement("section");
    if (id) element.id = id;
    element.innerHTML = title ? `<h2>${esc(title)}</h2>` : "";
    main.appendChild(element);
    return element;
  }

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

  // ------------------------------------------------------------------ cluster

  async function clusterPage() {
    const render = async () => {
      const { data } = await getJson("/ui/api/cluster");
      let text = `<h1>Cluster</h1><dl class="facts">
        <dt>Cluster id</dt><dd id="cluster-id">${esc(data.cluster_id)}</dd>
        <dt>Metadata offset</dt><dd id="metadata-offset">${data.metadata_offset}</dd>
        <dt>Metadata epoch</dt><dd>${data.metadata_epoch}</dd>
        <dt>Answered by</dt><dd>controller ${data.node_id}</dd></dl>`;
      const q = data.quorum;
      if (!q) {
        text += `<p class="error">${esc(data.quorum_refused)}</p>`;
      } else {
        const view = q.leader_view ?? q;
        const ready = q.ready ? "<span class=\"ok\">ready</span>"
          : `<span class="bad">not ready</span> (${esc(q.not_ready_reason)})`;
        text += `<h2>Quorum</h2><dl class="facts">
          <dt>Leader</dt><dd id="quorum-leader">${q.leader_id ?? "none"}</dd>
          <dt>Epoch</dt><dd id="quorum-epoch">${q.epoch}</dd>
          <dt>High watermark</dt><dd>${q.high_watermark}</dd>
          <dt>This controller</dt><dd>${esc(q.state)}, ${ready}</dd>
          <dt>Brokers · topics · controllers</dt><dd>${data.counts.brokers} · ${data.counts.topics}
            · ${data.counts.controllers}</dd></dl>
          <table id="voters"><thead><tr><th>Voter</th><th>Address</th><th>Log end</th>
          <th>Lag (entries)</th><th>Last contact</th><th>Connected</th></tr></thead><tbody>`;
        for (const v of view.voters) {
          const lead = v.node_id === view.leader_id ? " <span class=\"tag\">leader</span>" : "";
          text += `<tr><td>${v.node_id}${lead}</td><td>${esc(v.address)}</td>
            <td>${v.log_end_index ?? "?"}</td><td>${v.lag ?? "?"}</td>
            <td>${v.last_contact_ms_ago === null ? "?" : `${v.last_contact_ms_ago} ms ago`}</td>
            <td>${v.connected ? "yes" : "no"}</td></tr>`;
        }
        text += "</tbody></table>";
        if (!q.leader_view && q.leader_id !== q.node_id) {
          text += "<p class=\"muted\">Followers' lag is known to the leader only, which did "
            + "not answer.</p>";
        }
      }
      html(main, text);
    };
    await render();
    follow(throttle(render, 1000));
  }

  // ------------------------------------------------------------------ brokers

  async function brokersPage() {
    const disks = {};
    const render = async () => {
      const { data } = await getJson("/ui/api/brokers");
      let text = `<h1>Brokers</h1><table id="brokers"><thead><tr><th>Broker</th><th>State</th>
        <th>Rack</th><th>Endpoint</th><th>Epoch</th><th>Partitions (leads)</th>
        <th>Chunks</th><th>Disk</th></tr></thead><tbody>`;
      for (const b of data.brokers) {
        const state = b.fenced ? "<span class=\"bad\">fenced</span>"
          : "<span class=\"ok\">unfenced</span>";
        const shutdown = b.in_controlled_shutdown ? " <span class=\"tag\">shutting down</span>" : "";
        text += `<tr data-broker="${b.broker_id}"><td>${b.broker_id}</td><td>${state}${shutdown}</td>
          <td>${esc(b.rack ?? "–")}</td><td>${esc(b.endpoint ?? "–")}</td><td>${b.broker_epoch}</td>
          <td>${b.partitions} (${b.leaders})</td><td>${b.chunks}</td>
          <td class="disk" id="disk-${b.broker_id}">${esc(disks[b.broker_id] ?? "…")}</td></tr>`;
      }
      html(main, `${text}</tbody></table><p class="muted">Partitions and chunks count the
        topics you may describe; disk is the size of every log the broker holds, as it says.</p>`);
      for (const b of data.brokers) {
        if (disks[b.broker_id] !== undefined) continue;
        getJson(`/ui/api/brokers/${b.broker_id}/disk`).then(({ data: d }) => {
          disks[b.broker_id] = d.bytes === null ? `n/a (${d.error})` : `${bytes(d.bytes)} in ${d.logs} logs`;
          const cell = document.getElementById(`disk-${b.broker_id}`);
          if (cell) cell.textContent = disks[b.broker_id];
        });
      }
    };
    await render();
    follow(throttle(render, 2000));
  }

  // ------------------------------------------------------------------ topics

  async function topicsPage() {
    html(main, `<h1>Topics</h1><form id="search-form" class="bar"><input id="search"
      type="search" placeholder="Search topic names" autocomplete="off">
      <span id="topics-count" class="muted"></span></form>
      <div id="topics"></div><div class="bar"><button id="prev" type="button">Previous</button>
      <button id="next" type="button">Next</button></div>`);
    const search = document.getElementById("search");
    const tokens = [null];  // the token of each page seen, so Previous goes back
    let current = null; let nextToken = null;
    const render = async () => {
      const started = performance.now();
      const params = new URLSearchParams({ q: search.value, page_size: "50" });
      if (current) params.set("after", current);
      const { data } = await getJson(`/ui/api/topics?${params}`);
      nextToken = data.next;
      let text = "<table id=\"topic-table\"><thead><tr><th>Topic</th><th>Id</th><th>Partitions</th>"
        + "<th>Chunks</th><th>Replication factor</th></tr></thead><tbody>";
      for (const t of data.topics) {
        text += `<tr><td><a href="/ui/topics/${encodeURIComponent(t.name)}">${esc(t.name)}</a></td>
          <td class="mono">${esc(t.topic_id)}</td><td>${t.partitions}</td><td>${t.chunks}</td>
          <td>${t.replication_factor}</td></tr>`;
      }
      html(document.getElementById("topics"), data.topics.length ? `${text}</tbody></table>`
        : "<p id=\"no-topics\" class=\"muted\">No topics you may describe match.</p>");
      document.getElementById("topics-count").textContent = data.total === null
        ? "" : `${data.total} matching`;
      document.getElementById("prev").disabled = tokens.length <= 1;
      document.getElementById("next").disabled = !nextToken;
      timings.topics = performance.now() - started;
    };
    let debounce = null;
    search.addEventListener("input", () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => { tokens.length = 1; current = null; render(); }, 200);
    });
    document.getElementById("search-form").addEventListener("submit", (e) => e.preventDefault());
    document.getElementById("next").addEventListener("click", () => {
      if (!nextToken) return;
      tokens.push(nextToken); current = nextToken; render();
    });
    document.getElementById("prev").addEventListener("click", () => {
      if (tokens.length <= 1) return;
      tokens.pop(); current = tokens[tokens.length - 1]; render();
    });
    await render();
    follow(throttle(render, 1000));
  }

  // ------------------------------------------------------------------ topic: timeline

  const ROW_H = 24; const MARGIN_ROWS = 20;
  const HEADINGS = ["Partition", "Leader", "Replicas", "ISR", "Adding", "Removing",
    "Leader epoch", "Partition epoch", "Active start", "Chunks", "PriorPartitionEpochs"]
    .map((h) => `<th>${h}</th>`).join("");

  const timelineSvg = window.chunkraftTimelineSvg;  // timeline.js

  // ------------------------------------------------------------------ topic page

  async function topicPage() {
    const name = body.dataset.topic;
    const enc = encodeURIComponent(name);
    const wanted = /(?:^|[#&])p=(\d+)/.exec(location.hash);
    let selected = wanted ? Number(wanted[1]) : 0;
    let topic = null; let timeline = null;
    html(main, `<h1>Topic ${esc(name)}</h1><div id="topic-facts"></div>
      <section id="timeline-section"><h2 id="timeline-title">Chunk timeline</h2>
      <div id="timeline-facts" class="muted"></div><div id="timeline"></div>
      <p class="legend"><span class="key active"></span> active chunk <span class="key inactive">
      </span> inactive chunk <span class="key leader"></span> leader <span class="key adding"></span>
      adding (move in progress) <span class="key removing"></span> removing
      <span class="key overlap"></span> held past the stop offset (transactional cut)</p></section>
      <section id="actions"></section>
      <section><h2>Partitions</h2><div id="partitions"></div></section>
      <section id="configs"></section>
      <div id="dialog" class="dialog" hidden></div>`);

    let rowHeight = ROW_H;
    const renderTopic = (data) => {
      const started = performance.now();
      html(document.getElementById("topic-facts"), `<dl class="facts">
        <dt>Topic id</dt><dd class="mono">${esc(data.topic_id)}</dd>
        <dt>Partitions</dt><dd id="partition-count">${data.partitions}</dd>
        <dt>Chunks</dt><dd>${data.chunks}</dd><dt>Replication factor</dt>
        <dd>${data.replication_factor}</dd></dl>`);
      // The table is virtual: only the rows in view (and a margin) are in the document, so a
      // 10,000-partition topic costs what 60 rows cost; scrolling fills in the rest.
      const partitions = document.getElementById("partitions");
      if (!document.getElementById("partition-scroll")) {
        html(partitions, `<div class="gutter"><table class="fixed" id="partition-head"><thead>
          <tr>${HEADINGS}</tr></thead></table></div><div id="partition-scroll" class="gutter"><div id="partition-space"></div>
          <table class="fixed" id="partition-table"><tbody></tbody></table></div>`);
        const scroller = document.getElementById("partition-scroll");
        let queued = false;
        scroller.addEventListener("scroll", () => {
          if (queued) return;
          queued = true;
          requestAnimationFrame(() => { queued = false; renderRows(); });
        });
      }
      renderRows();
      // Rows are as tall as the browser makes them: measure one, so the space the scroller
      // holds and the rows' positions agree with what is drawn.
      const drawn = document.querySelector("#partition-table tr");
      if (drawn && Math.abs(drawn.getBoundingClientRect().height - rowHeight) > 0.1) {
        rowHeight = drawn.getBoundingClientRect().height;
        renderRows();
      }
      // (+4: the table's collapsed outer border is not part of any row.)
      document.getElementById("partition-space").style.height =
        `${data.rows.length * rowHeight + 4}px`;
      void partitions.offsetHeight;  // the layout counts too
      timings.table = performance.now() - started;
      body.dataset.tableRows = String(data.rows.length);
    };

    const rowHtml = (row) => {
      const [pid, leader, replicas, isr, adding, removing, le, pe, start, , chunks, nprior,
        prior] = row;
      let priors = "–";
      if (nprior) {
        priors = prior.map(([p, e]) => `${p}:${e}`).join(" ");
        if (nprior > prior.length) priors += ` … (${nprior})`;
      }
      const classes = [adding.length || removing.length ? "moving" : "",
        pid === selected ? "selected" : ""].filter(Boolean).join(" ");
      return `<tr data-p="${pid}"${classes ? ` class="${classes}"` : ""}><td>${pid}</td>
        <td>${leader}</td><td>${list(replicas)}</td><td>${list(isr)}</td><td>${list(adding)}</td>
        <td>${list(removing)}</td><td>${le}</td><td>${pe}</td><td>${start}</td><td>${chunks}</td>
        <td>${priors}</td></tr>`;
    };

    const renderRows = () => {
      const scroller = document.getElementById("partition-scroll");
      if (!scroller || !topic) return;
      const rows = topic.rows;
      const first = Math.max(0, Math.floor(scroller.scrollTop / rowHeight) - MARGIN_ROWS);
      const last = Math.min(rows.length,
        first + Math.ceil(scroller.clientHeight / rowHeight) + 2 * MARGIN_ROWS);
      const parts = [];
      for (let i = first; i < last; i += 1) parts.push(rowHtml(rows[i]));
      const table = document.getElementById("partition-table");
      table.style.top = `${first * rowHeight}px`;
      table.tBodies[0].innerHTML = parts.join("");
    };

    const markSelected = () => renderRows();

    const renderTimeline = (t) => {
      const started = performance.now();
      const width = Math.max(600, document.getElementById("timeline").clientWidth);
      html(document.getElementById("timeline-title"),
        `Chunk timeline of partition ${t.partition_id}`);
      html(document.getElementById("timeline-facts"), `${t.chunks} chunks · leader ${t.leader}
        · leader epoch ${t.leader_epoch} · partition epoch ${t.partition_epoch} · offsets
        ${t.axis_start}–${t.known_end - 1} known${t.moves_in_progress
          ? ` · <span class="bad">${t.moves_in_progress} move(s) in progress</span>` : ""}
        ${t.prior_partition_epochs.length ? ` · PriorPartitionEpochs ${t.prior_partition_epochs
          .slice(0, 50).map(([p, e]) => `${p}:${e}`).join(" ")}${t.prior_partition_epochs.length > 50 ? " …" : ""}` : ""}`);
      html(document.getElementById("timeline"), timelineSvg(t, width));
      body.dataset.timelineOffset = String(t.offset);
      body.dataset.timelineChunks = String(t.chunks);
      void document.getElementById("timeline").offsetHeight;
      timings.timeline = performance.now() - started;
      renderActions();
    };

    const loadTopic = async (minOffset = -1) => {
      const { status, data } = await getJson(`/ui/api/topics/${enc}?min_offset=${minOffset}`);
      if (status !== 200) {
        html(main, `<h1>Topic ${esc(name)}</h1><p class="error" id="topic-error">${esc(kafkaError(data))}</p>`);
        return false;
      }
      topic = data;
      renderTopic(data);
      return true;
    };

    const loadTimeline = async (minOffset = -1) => {
      const { status, data } = await getJson(
        `/ui/api/topics/${enc}/partitions/${selected}/timeline?min_offset=${minOffset}`);
      const target = document.getElementById("timeline");
      if (!target) return;  // the topic itself was refused: the page says so instead
      if (status !== 200) {
        html(target, `<p class="error">${esc(kafkaError(data))}</p>`);
        return;
      }
      // Bars come as rows of bar_fields (a long partition has thousands of them).
      const fields = data.bar_fields;
      data.bars = data.bars.map((row) => {
        const bar = {};
        for (let i = 0; i < fields.length; i += 1) bar[fields[i]] = row[i];
        return bar;
      });
      timeline = data;
      renderTimeline(data);
    };

    // A change seen (an event, or an answer to this page's own action): the timeline first
    // (what a person watches), then the table, each read at least at that offset.
    let pending = -1;
    const refresh = throttle(async () => {
      const at = pending;
      await loadTimeline(at);
      await loadTopic(at);
    }, 250);
    const changedAt = (offset) => {
      if (Number.isFinite(offset)) pending = Math.max(pending, offset);
      refresh();
    };

    // ---- actions (offered only when the principal may ALTER the topic)
    let lastResult = null;  // kept across re-renders of the actions after a change
    const showResult = () => {
      const box = document.getElementById("action-result");
      if (!box || !lastResult) return;
      box.className = lastResult.ok ? "ok" : "error";
      box.textContent = lastResult.text;
    };
    const result = (text, ok) => { lastResult = { text, ok }; showResult(); };
    const checked = (group) => [...document.querySelectorAll(`input[name="${group}"]:checked`)]
      .map((box) => Number(box.value));
    const brokerBoxes = (group, chosen) => topic.brokers.map((b) => `<label class="${b.fenced
      ? "muted" : ""}"><input type="checkbox" name="${group}" value="${b.broker_id}"
      ${chosen.includes(b.broker_id) ? "checked" : ""}> ${b.broker_id}${b.fenced ? " (fenced)" : ""}
      </label>`).join(" ");

    let actionsFor = null;
    const renderActions = () => {
      const target = document.getElementById("actions");
      if (!topic || !timeline || !timeline.may_alter) {
        html(target, topic && !topic.may_alter
          ? "<p class=\"muted\" id=\"no-actions\">You may not ALTER this topic: no actions.</p>" : "");
        return;
      }
      const key = `${timeline.partition_id}@${timeline.offset}`;
      if (actionsFor === key) return;
      actionsFor = key;
      const inactive = [...new Set(timeline.bars.filter((b) => !b.active).map((b) => b.start_offset))];
      html(target, `<h2>Actions</h2>
        <form id="cut-form" class="action"><strong>Cut</strong> the active chunk of partition
        ${timeline.partition_id} onto brokers ${brokerBoxes("cut", timeline.replicas)}
        <button id="cut-button" type="submit">Cut</button></form>
        <form id="move-form" class="action"><strong>Move</strong> the inactive chunk starting at
        <select id="move-start">${inactive.map((s) => `<option>${s}</option>`).join("")}</select>
        to brokers ${brokerBoxes("move", [])}
        <button id="move-button" type="submit" ${inactive.length ? "" : "disabled"}>Move</button></form>
        <form id="add-form" class="action"><strong>Add partitions</strong>: new count
        <input id="add-count" type="number" min="${topic.partitions + 1}" value="${topic.partitions + 1}">
        <button id="add-button" type="submit">Add…</button></form>
        <p id="action-result"></p>`);
      showResult();
      document.getElementById("cut-form").addEventListener("submit", async (e) => {
        e.preventDefault();
        const replicas = checked("cut");
        const { status, data, offset } = await v3("POST", "/chunks:create", { partitions: [
          { topic: name, partition: timeline.partition_id, replicas }] });
        const item = data?.data?.[0];
        if (status !== 200 || !item) result(`Refused: ${kafkaError(data)}`, false);
        else if (item.error_code) result(`Refused: ${kafkaError(item)}`, false);
        else {
          result(`Cut partition ${timeline.partition_id}: a new active chunk on ${list(replicas)}.`, true);
          changedAt(offset);
        }
      });
      document.getElementById("move-form").addEventListener("submit", async (e) => {
        e.preventDefault();
        const start = Number(document.getElementById("move-start").value);
        const replicas = checked("move");
        const { status, data, offset } = await v3("POST", "/chunks:alter-assignments", { chunks: [
          { topic: name, partition: timeline.partition_id, start_offset: start, replicas }] });
        const item = data?.data?.[0];
        if (status !== 200 || !item) result(`Refused: ${kafkaError(data)}`, false);
        else if (item.error_code) result(`Refused: ${kafkaError(item)}`, false);
        else {
          result(`Moving the chunk at ${start} to ${list(replicas)}.`, true);
          changedAt(offset);
        }
      });
      document.getElementById("add-form").addEventListener("submit", (e) => {
        e.preventDefault();
        const count = Number(document.getElementById("add-count").value);
        const dialog = document.getElementById("dialog");
        html(dialog, `<div class="dialog-box" id="kip253-note"><h2>Add partitions to ${esc(name)}:
          ${topic.partitions} → ${count}</h2>
          <p><strong>KIP-253.</strong> Keys map to other partitions from now on. To keep each key's
          order, every existing partition's leader epoch is bumped, and each new partition
          records the existing partitions' epochs before the change (PriorPartitionEpochs): a
          consumer that follows KIP-253 starts reading a new partition only once it has consumed
          the partitions it splits from up to that point. Clients that do not follow it may read
          a key's new records before its old ones.</p><p>Partitions cannot be removed again.</p>
          <button id="add-confirm" type="button">Add partitions</button>
          <button id="add-cancel" type="button">Cancel</button></div>`);
        dialog.hidden = false;
        document.getElementById("add-cancel").onclick = () => { dialog.hidden = true; };
        document.getElementById("add-confirm").onclick = async () => {
          dialog.hidden = true;
          const { status, data, offset } = await v3("POST", "/topics:create-partitions", { topics: [
            { topic_name: name, partitions_count: count }] });
          const item = data?.data?.[0];
          if (status !== 200 || !item) result(`Refused: ${kafkaError(data)}`, false);
          else if (item.error_code) result(`Refused: ${kafkaError(item)}`, false);
          else {
            result(`${name} now has ${count} partitions.`, true);
            changedAt(offset);
          }
        };
      });
    };

    // ---- configurations of the topic (REST v3 read)
    const loadConfigs = async () => {
      const target = document.getElementById("configs");
      const answer = await v3("GET", `/topics/${enc}/configs`);
      html(target, `<h2>Configs</h2>${answer.status === 200 ? configTable(answer.data.data, true)
        : `<p class="error">${esc(kafkaError(answer.data))}</p>`}`);
    };

    document.getElementById("partitions").addEventListener("click", (e) => {
      const row = e.target.closest("tr[data-p]");
      if (!row) return;
      selected = Number(row.dataset.p);
      history.replaceState(null, "", `#p=${selected}`);
      markSelected();
      loadTimeline();
    });

    // The partition table and the timeline are read side by side.
    const [found] = await Promise.all([loadTopic(), loadTimeline()]);
    if (found) {
      renderActions();
      loadConfigs();
      follow((change) => {
        if (!change.topics.includes(name) && !change.reset) return;
        changedAt(change.offset);
      });
    }
  }

  // ------------------------------------------------------------------ configs and ACLs

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

  async function configsPage() {
    html(main, `<h1>Configs</h1><section id="broker-defaults"><h2>Every broker (cluster
      default)</h2><div id="defaults"></div></section><section><h2>One broker or topic</h2>
      <form id="config-form" class="bar"><select id="config-kind"><option value="topics">topic
      </option><option value="brokers">broker</option></select> <input id="config-name"
      placeholder="topic name or broker id" required> <button type="submit">Show</button></form>
      <div id="config-result"></div></section>`);
    const defaults = await v3("GET", "/broker-configs");
    html(document.getElementById("defaults"), defaults.status === 200
      ? configTable(defaults.data.data) : `<p class="error">${esc(kafkaError(defaults.data))}</p>`);
    document.getElementById("config-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      const kind = document.getElementById("config-kind").value;
      const key = encodeURIComponent(document.getElementById("config-name").value.trim());
      const answer = await v3("GET", `/${kind}/${key}/configs`);
      html(document.getElementById("config-result"), answer.status === 200
        ? configTable(answer.data.data) : `<p class="error">${esc(kafkaError(answer.data))}</p>`);
    });
  }

  async function aclsPage() {
    const render = async () => {
      const answer = await v3("GET", "/acls");
      if (answer.status !== 200) {
        html(main, `<h1>ACLs</h1><p class="error" id="acls-error">${esc(kafkaError(answer.data))}</p>`);
        return;
      }
      let text = `<h1>ACLs</h1><table id="acls"><thead><tr><th>Principal</th><th>Host</th>
        <th>Operation</th><th>Permission</th><th>Resource</th><th>Name</th><th>Pattern</th>
        </tr></thead><tbody>`;
      for (const a of answer.data.data) {
        text += `<tr><td>${esc(a.principal)}</td><td>${esc(a.host)}</td><td>${esc(a.operation)}</td>
          <td>${esc(a.permission)}</td><td>${esc(a.resource_type)}</td>
          <td class="mono">${esc(a.resource_name)}</td><td>${esc(a.pattern_type)}</td></tr>`;
      }
      html(main, answer.data.data.length ? `${text}</tbody></table>`
        : "<h1>ACLs</h1><p class=\"muted\">No ACLs: only super users (and the rules for a "
          + "resource without ACLs) decide.</p>");
    };
    await render();
    follow(throttle(render, 1000));
  }

  function auditPage() {
    const { report, exportDir } = body.dataset;
    if (!exportDir) {
      html(main, "<h1>Audit</h1><p class=\"muted\">No export directory is configured "
        + "(metadata.snapshot.export.dir): the console shows the newest audit report found "
        + "under it.</p>");
    } else if (!report) {
      html(main, `<h1>Audit</h1><p class="muted">No report.html under ${esc(exportDir)} yet: run
        <code>chunkraft audit --out ${esc(exportDir)}/audit</code>.</p>`);
    } else {
      html(main, `<h1>Audit</h1><p><a href="${esc(report)}" target="_blank">Open the newest
        report</a> (found under ${esc(exportDir)})</p><iframe id="audit-report"
        src="${esc(report)}" title="audit report"></iframe>`);
    }
  }

  const pages = { cluster: clusterPage, brokers: brokersPage, topics: topicsPage,
    topic: topicPage, configs: configsPage, acls: aclsPage, audit: auditPage };
  const start = pages[body.dataset.page];
  if (start) {
    Promise.resolve(start()).then(() => { body.dataset.ready = "true"; })
      .catch((error) => {
        if (error.message !== "logged out") {
          main.insertAdjacentHTML("beforeend", `<p class="error">${esc(error)}</p>`);
        }
      });
  }
})();
