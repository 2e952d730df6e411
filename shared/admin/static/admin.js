// edgeindex admin page. Plain DOM, no framework, no build step.
// Everything shown comes from the worker's JSON routes, authorised by the admin key, which is kept in
// this tab's sessionStorage and sent only in the Authorization header (never in a URL).
// User data (ids, titles, failure reasons, chunk text) is only ever set as textContent: never parsed as HTML.
"use strict";

(function () {
  const KEY = "edgeindex.adminKey";
  const SCREENS = ["tenants", "documents", "upload", "search", "telemetry", "models"];
  const BUSY = new Set(["pending", "processing"]);
  const POLL_MS = 1500;
  const $ = (id) => document.getElementById(id);

  let pollTimer = null;
  let docsAfter = null;

  // --- DOM helpers: text only ---------------------------------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (name === "className") node.className = value;
      else if (name === "dataset") Object.assign(node.dataset, value);
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function fill(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  function fmtTime(value) {
    if (!value) return "";
    const d = new Date(value);
    return isNaN(d) ? String(value) : d.toISOString().replace("T", " ").slice(0, 19);
  }

  function fmtNum(value, digits = 3) {
    return typeof value === "number" ? value.toFixed(digits) : "";
  }

  function flash(message, kind) {
    const node = $("flash");
    node.textContent = message || "";
    node.className = kind || "";
  }

  function list(text) {
    return (text || "").split(",").map((s) => s.trim()).filter(Boolean);
  }

  // --- the API --------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      const message = body && body.message ? body.message : `HTTP ${status}`;
      super(body && body.field ? `${message} (field: ${body.field})` : message);
      this.status = status;
      this.body = body;
    }
  }

  async function api(method, path, { json, body, contentType, key } = {}) {
    const headers = { Authorization: "Bearer " + (key || sessionStorage.getItem(KEY) || "") };
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(json);
    } else if (contentType) {
      headers["Content-Type"] = contentType;
    }
    const response = await fetch(path, { method, headers, body, credentials: "omit", cache: "no-store" });
    let payload = null;
    const text = await response.text();
    try { payload = text ? JSON.parse(text) : null; } catch (e) { payload = { message: text.slice(0, 300) }; }
    if (!response.ok) {
      if (response.status === 401 && !key) signOut("The key was refused: " + ((payload && payload.message) || ""));
      throw new ApiError(response.status, payload);
    }
    return payload;
  }

  const enc = encodeURIComponent;

  // --- sign in ------------------------------------------------------------------------------------

  async function signIn(event) {
    event.preventDefault();
    const key = $("admin-key").value.trim();
    $("signin-error").textContent = "";
    if (!key) return;
    try {
      await api("GET", "/admin/api/overview", { key });   // an admin route: a tenant key gets 403
    } catch (err) {
      $("signin-error").textContent = `Sign-in refused (${err.status || "network"}): ${err.message}`;
      return;
    }
    sessionStorage.setItem(KEY, key);
    $("admin-key").value = "";
    enter();
  }

  function signOut(message) {
    sessionStorage.removeItem(KEY);
    stopPolling();
    $("app").hidden = true;
    $("session").hidden = true;
    $("signin").hidden = false;
    $("signin-error").textContent = message || "";
  }

  function enter() {
    $("signin").hidden = true;
    $("app").hidden = false;
    $("session").hidden = false;
    const wanted = (location.hash || "").slice(1);
    show(SCREENS.includes(wanted) ? wanted : "tenants");
  }

  // --- screens ----------------------------------------------------------------------------------------

  function show(name) {
    stopPolling();
    flash("");
    for (const screen of SCREENS) {
      $("screen-" + screen).hidden = screen !== name;
    }
    for (const button of document.querySelectorAll("nav button")) {
      button.classList.toggle("active", button.dataset.screen === name);
    }
    if (location.hash !== "#" + name) history.replaceState(null, "", "#" + name);
    const load = { tenants: loadTenants, documents: loadDocumentsScreen, upload: loadEntities,
                   search: loadEntities, telemetry: loadTelemetry, models: loadModels }[name];
    const section = $("screen-" + name);
    section.dataset.state = "loading";  // "loaded" once its data is shown (what a browser test waits for)
    load().then(() => { section.dataset.state = "loaded"; },
                (err) => { section.dataset.state = "error"; flash(err.message, "error"); });
  }

  // tenants and keys

  async function loadEntities() {
    const overview = await api("GET", "/admin/api/overview");
    for (const select of document.querySelectorAll("select.entity-select")) {
      const current = select.value;
      fill(select, overview.entities.map((e) => el("option", { value: e.id }, e.id)));
      if (overview.entities.some((e) => e.id === current)) select.value = current;
    }
    return overview;
  }

  async function loadTenants() {
    const [overview, keys] = await Promise.all([loadEntities(), api("GET", "/admin/keys")]);
    fill($("tenants-table").tBodies[0], overview.entities.map((e) => el("tr", { dataset: { entity: e.id } },
      el("td", {}, e.id), el("td", {}, e.kind), el("td", {}, e.name),
      el("td", {}, e.documents.ready), el("td", {}, e.documents.pending), el("td", {}, e.documents.processing),
      el("td", { className: e.documents.failed ? "bad" : "" }, e.documents.failed),
      el("td", {}, e.keys), el("td", {}, fmtTime(e.created_at)))));
    fill($("keys-table").tBodies[0], keys.keys.map((k) => el("tr", { dataset: { key: k.id } },
      el("td", {}, k.id), el("td", {}, k.name), el("td", {}, (k.entity_ids || []).join(", ")),
      el("td", {}, k.is_admin ? "yes" : ""), el("td", {}, fmtTime(k.created_at)),
      el("td", {}, fmtTime(k.revoked_at)),
      el("td", {}, k.revoked_at || k.id === "admin" ? "" :
        el("button", { type: "button", className: "revoke", onclick: () => revokeKey(k.id) }, "Revoke")))));
  }

  async function createTenant(event) {
    event.preventDefault();
    try {
      const entity = await api("POST", "/admin/entities",
        { json: { id: $("tenant-id").value.trim(), kind: $("tenant-kind").value, name: $("tenant-name").value } });
      flash(`Tenant ${entity.id} created.`, "ok");
      $("tenant-form").reset();
      await loadTenants();
    } catch (err) {
      flash(err.message, "error");
    }
  }

  async function createKey(event) {
    event.preventDefault();
    try {
      const key = await api("POST", "/admin/keys", { json: {
        name: $("key-name").value.trim(), entity_ids: list($("key-entities").value), admin: $("key-admin").checked } });
      $("new-key-secret").textContent = key.key;
      $("new-key").hidden = false;
      flash(`Key ${key.id} created.`, "ok");
      $("key-form").reset();
      await loadTenants();
    } catch (err) {
      flash(err.message, "error");
    }
  }

  async function revokeKey(id) {
    if (!window.confirm(`Revoke ${id}? Agents using it are refused from now on.`)) return;
    try {
      await api("DELETE", "/admin/keys/" + enc(id));
      flash(`Key ${id} revoked.`, "ok");
      await loadTenants();
    } catch (err) {
      flash(err.message, "error");
    }
  }

  // documents

  async function loadDocumentsScreen() {
    await loadEntities();
    await loadDocuments();
  }

  function docRow(d) {
    const actions = el("td", {});
    if (d.status === "failed") {
      actions.append(el("button", { type: "button", className: "retry", onclick: () => retry(d) }, "Retry"));
    }
    return el("tr", { dataset: { status: d.status } },
      el("td", { className: "doc-id" }, d.document_id), el("td", {}, d.version),
      el("td", { className: "status " + d.status }, d.status), el("td", {}, d.step || ""),
      el("td", { className: "reason" }, d.error || ""), el("td", {}, d.title || ""),
      el("td", {}, d.status === "ready" ? `${d.chunk_count ?? ""} (${d.chunks_embedded ?? 0} embedded, ` +
        `${d.chunks_reused ?? 0} reused)` : ""),
      el("td", {}, fmtTime(d.updated_at)), actions);
  }

  async function loadDocuments(more) {
    stopPolling();
    const entity = $("docs-entity").value;
    const tbody = $("docs-table").tBodies[0];
    if (!entity) {
      fill(tbody, []);
      flash("No tenant yet: create one under Tenants & keys.");
      return;
    }
    const params = new URLSearchParams({ limit: "100" });
    if ($("docs-status").value) params.set("status", $("docs-status").value);
    if (more && docsAfter) params.set("after", docsAfter);
    const page = await api("GET", `/entities/${enc(entity)}/documents?${params}`);
    const rows = page.documents.map(docRow);
    if (more) tbody.append(...rows); else fill(tbody, rows);
    docsAfter = page.next_after;
    $("docs-more").hidden = !page.next_after;
    // Documents still on their way: look again until they are ready or failed.
    const busy = page.documents.filter((d) => BUSY.has(d.status)).length;
    $("docs-polling").textContent = busy ? `${busy} in progress, refreshing…` : "";
    if (busy && !more && !$("screen-documents").hidden) {
      pollTimer = setTimeout(() => loadDocuments().catch((err) => flash(err.message, "error")), POLL_MS);
    }
  }

  async function retry(doc) {
    try {
      const d = await api("POST", `/entities/${enc(doc.entity_id)}/documents/${enc(doc.document_id)}/retry`);
      flash(`Retrying ${d.document_id} as version ${d.version}.`, "ok");
      await loadDocuments();
    } catch (err) {
      flash(err.message, "error");
    }
  }

  function stopPolling() {
    if (pollTimer) clearTimeout(pollTimer);
    pollTimer = null;
  }

  // upload

  const TYPES = { md: "text/markdown", markdown: "text/markdown", html: "text/html", htm: "text/html",
                  json: "application/json", pdf: "application/pdf", txt: "text/plain" };

  async function upload(event) {
    event.preventDefault();
    const entity = $("upload-entity").value;
    const file = $("upload-file").files[0];
    let id = $("upload-id").value.trim();
    let type = $("upload-type").value;
    let body = $("upload-text").value;
    if (file) {
      body = file;
      id = id || file.name;
      const ext = file.name.split(".").pop().toLowerCase();
      type = TYPES[ext] || file.type || type;
    }
    if (!entity) return flash("Create a tenant first.", "error");
    if (!id) return flash("Give the document an id (or pick a file).", "error");
    if (!file && !body.trim()) return flash("Paste some text or pick a file.", "error");
    const params = new URLSearchParams();
    if ($("upload-title").value.trim()) params.set("title", $("upload-title").value.trim());
    if (list($("upload-tags").value).length) params.set("tags", list($("upload-tags").value).join(","));
    const query = params.toString() ? "?" + params : "";
    try {
      const d = await api("PUT", `/entities/${enc(entity)}/documents/${enc(id)}${query}`,
        { body, contentType: type });
      $("upload-result").textContent = `Uploaded ${d.document_id} to ${d.entity_id}: version ${d.version}, ` +
        `${d.status}. Follow it under Documents.`;
      $("upload-result").className = "ok";
      $("upload-form").reset();
    } catch (err) {
      $("upload-result").textContent = err.message;
      $("upload-result").className = "error";
    }
  }

  // search playground

  async function search(event) {
    event.preventDefault();
    $("search-meta").textContent = "searching…";
    const request = { query: $("search-query").value, k: Number($("search-k").value || 10),
                      cache: $("search-cache").checked, include: { text: true } };
    const entities = list($("search-entities").value);
    if (entities.length) request.entity_ids = entities;
    if ($("search-alpha").value !== "") request.alpha = Number($("search-alpha").value);
    if ($("search-fusion").value) request.fusion = $("search-fusion").value;
    if ($("search-mode").value) request.text_mode = $("search-mode").value;
    if (!request.entity_ids) {
      const overview = await api("GET", "/admin/api/overview");
      request.entity_ids = overview.entities.map((e) => e.id).slice(0, 100);
      if (!request.entity_ids.length) return flash("No tenant to search yet.", "error");
    }
    try {
      renderSearch(await api("POST", "/admin/api/search", { json: request }));
      flash("");
    } catch (err) {
      $("search-meta").textContent = "";
      flash(err.message, "error");
    }
  }

  const KNOWN = new Set(["results", "entity_ids", "corrections", "count", "cache", "took_ms", "timings"]);

  function renderSearch(answer) {
    // the rest of the answer (routing, enhancement, warnings) as indented JSON that wraps
    const extra = Object.fromEntries(Object.keys(answer).filter((k) => !KNOWN.has(k)).map((k) => [k, answer[k]]));
    $("search-meta").textContent = `${answer.count} result(s) in ${fmtNum(answer.took_ms, 1)} ms, cache: ` +
      `${answer.cache}, over ${answer.entity_ids.join(", ")}`;
    $("search-extra").hidden = !Object.keys(extra).length;
    $("search-extra-json").textContent = JSON.stringify(extra, null, 2);
    $("search-details").hidden = false;
    const timings = Object.entries(answer.timings || {});
    fill($("search-timings").tBodies[0], timings.length ? timings.map(([k, v]) =>
      el("tr", {}, el("th", {}, k), el("td", {}, fmtNum(v, 2)))) :
      [el("tr", {}, el("td", {}, answer.cache === "none" ? "none reported" : `served from the ${answer.cache} cache`))]);
    const corrections = Object.entries(answer.corrections || {});
    fill($("search-corrections"), corrections.length ?
      corrections.map(([stem, terms]) => el("li", { className: "correction" },
        `${typedWord(stem, $("search-query").value)} → ` +
        [...new Set(terms.map((t) => shownWord(t, answer.results)))].join(", "))) : [el("li", {}, "none")]);
    fill($("search-results").tBodies[0], answer.results.map((r, i) => {
      const s = r.scores || {};
      const more = Object.entries(s).filter(([k, v]) => !["vector", "text", "trigram"].includes(k) && v !== null)
        .map(([k, v]) => `${k} ${fmtNum(v)}`).join(", ");
      return el("tr", { className: "result" },
        el("td", {}, i + 1), el("td", {}, fmtNum(r.score) + (more ? ` (${more})` : "")),
        el("td", {}, fmtNum(s.vector)), el("td", {}, fmtNum(s.text)), el("td", {}, fmtNum(s.trigram)),
        el("td", {}, r.entity_id),
        el("td", { className: "doc-id" }, r.document_id, r.document && r.document.title ?
          el("div", { className: "muted" }, r.document.title) : null),
        el("td", { className: "chunk" }, r.text || ""));
    }));
  }

  // Corrections come as stems (the full-text index's lexemes: "databs" → "databas"); a person reads
  // words, so each stem is shown as the query word it came from and the word the results hold.
  const WORD = /[\p{L}\p{N}_]+/gu;

  // A stemmer trims endings and may rewrite the last letters ("secondry" → "secondri"), so a stem
  // belongs to the word it shares the longest start with, all but its last two letters at least.
  function commonStart(a, b) {
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    return i;
  }

  function closest(stem, words) {
    const lower = stem.toLowerCase();
    const need = Math.max(3, lower.length - 2);
    const scored = words.map((w) => [w, commonStart(lower, w.toLowerCase())]).filter(([, n]) => n >= need);
    if (!scored.length) return [];
    const best = Math.max(...scored.map(([, n]) => n));
    return scored.filter(([, n]) => n === best).map(([w]) => w);
  }

  function typedWord(stem, query) {
    const found = closest(stem, query.match(WORD) || []);
    return found.sort((a, b) => a.length - b.length)[0] || stem;
  }

  function shownWord(stem, results) {
    const found = closest(stem, results.flatMap((r) => (r.text || "").match(WORD) || [])).map((w) => w.toLowerCase());
    if (!found.length) return stem;
    const counts = new Map();
    for (const w of found) counts.set(w, (counts.get(w) || 0) + 1);
    // the most frequent, then the shortest: "database" over "databases"
    return [...counts].sort((a, b) => b[1] - a[1] || a[0].length - b[0].length)[0][0];
  }

  // telemetry: the router's report, when the deployment has one (404 until then)

  async function loadTelemetry() {
    const report = $("telemetry-report");
    report.replaceChildren();
    $("telemetry-empty").hidden = true;
    let data;
    try {
      data = await api("GET", "/admin/api/telemetry");
    } catch (err) {
      if (err.status === 404) {
        $("telemetry-empty").hidden = false;
        const detail = err.message.replace(/^no telemetry yet:\s*/i, "");
        $("telemetry-empty").replaceChildren(el("strong", {}, "No telemetry yet."), " ",
                                             el("span", { className: "muted" }, detail));
        return;
      }
      throw err;
    }
    report.append(render(data, 0));
  }

  // A report of any shape: numbers in a map become bars (a chart), other values tables and lists.
  function render(value, depth) {
    if (Array.isArray(value)) {
      if (value.length && value.every((v) => v && typeof v === "object" && !Array.isArray(v))) {
        const cols = [...new Set(value.flatMap((v) => Object.keys(v)))];
        return el("table", {}, el("thead", {}, el("tr", {}, ...cols.map((c) => el("th", {}, c)))),
          el("tbody", {}, ...value.map((row) => el("tr", {}, ...cols.map((c) => el("td", {},
            typeof row[c] === "object" && row[c] !== null ? JSON.stringify(row[c]) : fmtValue(row[c])))))));
      }
      return el("span", {}, value.map(fmtValue).join(", "));
    }
    if (value && typeof value === "object") {
      // nothing to show under a heading (no data yet) is no heading at all
      const entries = Object.entries(value).filter(([, v]) => !isEmpty(v));
      const numeric = entries.filter(([, v]) => typeof v === "number");
      // a count beside measurements (latency percentiles and their n) is a caption, not a bar on their axis
      const counts = numeric.filter(([k]) => COUNT_KEYS.has(k));
      const measured = numeric.filter(([k]) => !COUNT_KEYS.has(k));
      if (measured.length && numeric.length === entries.length && (depth > 0 || entries.length > 1)) {
        const max = Math.max(...measured.map(([, v]) => Math.abs(v))) || 1;
        return el("div", { className: "bars" }, ...measured.map(([k, v]) => el("div", { className: "bar-row" },
          el("span", { className: "bar-label" }, k),
          bar(100 * Math.abs(v) / max),
          el("span", { className: "bar-value" }, fmtValue(v)))),
          ...(counts.length && measured.length ? [el("div", { className: "muted bar-count" },
            counts.map(([k, v]) => `${k === "n" ? "samples" : k}: ${fmtValue(v)}`).join(", "))] : []));
      }
      // a single value reads as "name: value" on one line; a map or a list gets its heading
      return el("div", { className: "section" }, ...entries.map(([k, v]) => typeof v !== "object" ?
        el("p", { className: "scalar" }, el("strong", {}, k + ": "), fmtValue(v)) :
        el("div", {}, el(depth ? "h4" : "h3", {}, k), render(v, depth + 1))));
    }
    return el("span", {}, fmtValue(value));
  }

  function bar(percent) {
    const node = el("span", { className: "bar" });
    node.style.width = `${Math.round(percent)}%`;  // CSSOM, which the page's CSP allows (a style attribute it does not)
    return node;
  }

  const COUNT_KEYS = new Set(["n", "count", "searches", "feedback_events"]);

  function isEmpty(v) {
    return v === null || v === undefined || (Array.isArray(v) && !v.length) ||
      (typeof v === "object" && !Array.isArray(v) && !Object.values(v).some((x) => !isEmpty(x)));
  }

  function fmtValue(v) {
    // three significant digits at most, never more than three decimals: 12.3 ms, 0.412, 1234
    if (typeof v === "number") {
      if (Number.isInteger(v)) return String(v);
      const a = Math.abs(v);
      return v.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
    }
    return v === null || v === undefined ? "" : String(v);
  }

  // models

  const ACTIVE_JOB = new Set(["queued", "running"]);

  function jobOutcome(job) {
    if (job.error) return job.error;
    const r = job.result || {};
    const parts = [];
    if (r.backfill) parts.push(`${r.backfill.embedded} chunks embedded` + (r.backfill.stopped ? " (stopped)" : ""));
    if (r.cutover) parts.push(`now serving ${r.cutover.to_model}: ${r.cutover.chunks} chunks, ` +
                              `writes held ${r.cutover.locked_seconds} s`);
    return parts.join("; ");
  }

  async function loadModels() {
    stopPolling();
    const m = await api("GET", "/admin/api/models");
    $("models-serving").textContent = `${m.serving.model_id} (dimension ${m.serving.dimension})`;
    fill($("models-vectors").tBodies[0], m.models.map((v) => el("tr", { dataset: { model: v.model_id } },
      el("td", {}, v.model_id), el("td", {}, v.entity_ids ? v.entity_ids.join(", ") : "every entity"),
      el("td", {}, v.state), el("td", {}, `${v.vectors} of ${v.chunks}`), el("td", {}, (v.covered * 100).toFixed(1) + "%"),
      el("td", {}, v.chunks_per_second === null ? "" : v.chunks_per_second), el("td", {}, fmtTime(v.updated_at)))));
    fill($("models-jobs").tBodies[0], m.jobs.map((j) => el("tr", { dataset: { job: j.id, state: j.state } },
      el("td", {}, j.id), el("td", {}, j.action), el("td", {}, j.model_id), el("td", { className: "state" }, j.state),
      el("td", {}, fmtTime(j.created_at)), el("td", {}, fmtTime(j.finished_at)), el("td", {}, jobOutcome(j)),
      el("td", {}, ACTIVE_JOB.has(j.state) && !j.stop_requested ?
        el("button", { type: "button", onclick: () => stopJob(j.id) }, "Stop") : null))));
    fill($("models-shadow").tBodies[0], m.shadow.map((s) => el("tr", {},
      el("td", {}, s.shadow_model), el("td", {}, s.serving_model), el("td", {}, s.searches),
      el("td", {}, (s.overlap * 100).toFixed(1) + "%"), el("td", {}, s.shadow_ms_p50))));
    fill($("models-cutovers").tBodies[0], m.cutovers.map((c) => el("tr", {},
      el("td", {}, fmtTime(c.at)), el("td", {}, c.from_model), el("td", {}, c.to_model), el("td", {}, c.chunks),
      el("td", {}, c.rollback ? "yes" : ""))));
    // the progress of a job in hand, until it ends
    if (m.jobs.some((j) => ACTIVE_JOB.has(j.state)) && !$("screen-models").hidden) {
      pollTimer = setTimeout(() => loadModels().catch((err) => flash(err.message, "error")), POLL_MS);
    }
    return m;
  }

  async function startModelJob(event) {
    event.preventDefault();
    const action = $("model-action").value;
    const request = { action };
    if (action !== "rollback") request.model = $("model-name").value;
    if (action === "backfill" || action === "migrate") request.duty = Number($("model-duty").value);
    try {
      const job = await api("POST", "/admin/api/models/jobs", { json: request });
      flash(`Job ${job.id} queued: ${job.action} ${job.model_id}.`, "ok");
    } catch (err) {
      flash(err.message, "error");
    }
    await loadModels();
  }

  async function stopJob(id) {
    try {
      await api("POST", `/admin/api/models/jobs/${enc(id)}/stop`);
      flash(`Job ${id}: stop asked; a backfill stops after the batch in hand.`, "ok");
    } catch (err) {
      flash(err.message, "error");
    }
    await loadModels();
  }

  // --- wiring -------------------------------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    $("signin-form").addEventListener("submit", signIn);
    $("signout").addEventListener("click", () => signOut("Signed out."));
    $("tenant-form").addEventListener("submit", createTenant);
    $("key-form").addEventListener("submit", createKey);
    $("docs-form").addEventListener("submit", (e) => { e.preventDefault(); loadDocuments().catch((err) => flash(err.message, "error")); });
    $("docs-entity").addEventListener("change", () => loadDocuments().catch((err) => flash(err.message, "error")));
    $("docs-more").addEventListener("click", () => loadDocuments(true).catch((err) => flash(err.message, "error")));
    $("upload-form").addEventListener("submit", upload);
    $("search-form").addEventListener("submit", (e) => search(e).catch((err) => flash(err.message, "error")));
    $("model-job-form").addEventListener("submit", (e) => startModelJob(e).catch((err) => flash(err.message, "error")));
    for (const button of document.querySelectorAll("nav button")) {
      button.addEventListener("click", () => show(button.dataset.screen));
    }
    if (sessionStorage.getItem(KEY)) enter();
  });
})();
