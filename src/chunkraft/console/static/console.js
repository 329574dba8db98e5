// chunkraft console: fills the page shells of /ui from /ui/api (the topic page is
// topic_page.js, the shared helpers console_common.js) and starts the page's script.
// Written for this project; no library, nothing fetched elsewhere.
"use strict";

(() => {
  const {
    body, main, timings, esc, bytes, getJson, v3, kafkaError, html, throttle,
    follow, configTable,
  } = window.chunkraftConsole;

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


  // ------------------------------------------------------------------ configs and ACLs


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
    topic: window.chunkraftTopicPage, configs: configsPage, acls: aclsPage, audit: auditPage };
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
