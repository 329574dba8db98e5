// chunkraft console: the topic page. Its partitions table (paginated in the page), the chunk
// timeline of the selected partition (drawn by timeline.js), its configurations, and the cut,
// move and add-partitions actions through REST v3. Written for this project.
"use strict";

(() => {
  const {
    body, main, timings, esc, list, getJson, v3, kafkaError, html, throttle, follow,
    configTable,
  } = window.chunkraftConsole;

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

  window.chunkraftTopicPage = topicPage;
})();
