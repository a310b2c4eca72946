// toolmock's UI: a client of the public API, nothing else. Every value shown
// comes from an API answer and is written with textContent (never as HTML).
"use strict";

const TOKEN_KEY = "toolmock.token";
const main = () => document.getElementById("main");

// ---- DOM helpers -----------------------------------------------------------

/** Builds an element: h("a", {href: "#/x", class: "c"}, "text", child…). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    // Through the CSSOM: the page's policy refuses style attributes.
    else if (key === "style") el.style.cssText = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const badge = (text, kind) => h("span", { class: `badge ${kind || text}` }, text);
const json = (value) => h("pre", {}, JSON.stringify(value, null, 2));
const shortHash = (hash) => (hash ? hash.slice(0, 12) + "…" : "—");
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");

function render(...nodes) {
  const root = main();
  root.replaceChildren(...nodes.flat().filter(Boolean));
}

function notice(kind, ...children) {
  return h("div", { class: `notice ${kind}`, role: kind === "bad" ? "alert" : "status" }, ...children);
}

// ---- The API ---------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "http_" + status;
    this.details = error.details;
    this.body = body;
  }
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch (_) {
    parsed = { error: { code: "not_json", message: text.slice(0, 200) } };
  }
  if (response.status === 401) {
    signOut("Your token was refused (" + ((parsed && parsed.error && parsed.error.message) || "unauthenticated") + "). Paste a valid one.");
    throw new ApiError(401, parsed);
  }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

function errorNotice(error) {
  const items = [];
  const problems = (error.details && (error.details.problems || error.details.diagnostics)) || [];
  for (const p of problems) items.push(h("li", {}, h("span", { class: "path mono" }, p.path || "/"), `${p.code}: ${p.message}`));
  return notice("bad", h("strong", {}, `${error.code}`), " — ", error.message, items.length ? h("ul", { class: "diagnostics" }, items) : null);
}

/** Reads server-sent events with the bearer token (EventSource cannot send one). */
async function followEvents(path, onEvent, signal) {
  const response = await fetch(path, { headers: { Authorization: `Bearer ${token()}` }, signal });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

// ---- Sign-in ---------------------------------------------------------------

function claims() {
  try {
    const payload = token().split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload));
  } catch (_) {
    return null;
  }
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  showSignIn(message);
}

function showSignIn(message) {
  document.getElementById("who").replaceChildren();
  const input = h("textarea", { id: "token", class: "small", placeholder: "eyJhbGciOiJIUzI1NiIs…", "aria-label": "Development token" });
  const form = h(
    "form",
    {
      onsubmit: (event) => {
        event.preventDefault();
        const value = input.value.trim();
        if (!value) return;
        sessionStorage.setItem(TOKEN_KEY, value);
        route();
      },
    },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste a token. For development, mint one with ", h("code", {}, "toolmock-api token --tenant acme --permission AIManager:ManageTools --permission AIManager:RunSimulations"), "."),
    message ? notice("bad", message) : null,
    input,
    h("p", {}, h("button", { type: "submit", id: "sign-in" }, "Sign in")),
  );
  render(h("div", { class: "card signin" }, form));
}

function showWho() {
  const c = claims() || {};
  document.getElementById("who").replaceChildren(
    h("span", {}, `${c.sub || "?"} · tenant ${c.tenant || "?"}`),
    h("button", { class: "secondary", onclick: () => signOut() }, "Sign out"),
  );
}

// ---- Router ----------------------------------------------------------------

let leaving = () => {};

async function route() {
  leaving();
  leaving = () => {};
  if (!token()) return showSignIn();
  showWho();
  const parts = (location.hash.replace(/^#\/?/, "") || "tools").split("/");
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === parts[0]);
  render(h("p", { class: "muted" }, "Loading…"));
  try {
    if (parts[0] === "tools" && parts.length === 1) await toolsPage();
    else if (parts[0] === "tools" && parts[2] === "operations") await operationPage(parts[1], parts[3]);
    else if (parts[0] === "tools") await toolPage(parts[1]);
    else if (parts[0] === "simulations" && parts.length === 1) await simulationsPage();
    else if (parts[0] === "simulations" && parts[2] === "coverage") await coveragePage(parts[1]);
    else if (parts[0] === "simulations") await simulationPage(parts[1]);
    else if (parts[0] === "attempts") await attemptPage(parts[1]);
    else render(h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/tools" }, "Back to the tools")));
  } catch (error) {
    if (error.status === 401) return;
    render(h("h1", {}, error.status === 404 ? "Not found" : "Something went wrong"), errorNotice(error));
  }
}

// ---- Tools -----------------------------------------------------------------

async function toolsPage() {
  const page = await api("GET", "/api/tools?limit=200");
  const rows = page.tools.map((t) =>
    h("tr", {},
      h("td", {}, h("a", { href: `#/tools/${t.id}` }, t.name)),
      h("td", {}, t.kind),
      h("td", {}, t.current ? badge(`${t.current} current`, "current") : null, " ",
        t.stale ? badge(`${t.stale} stale`, "stale") : null, " ",
        t.missing ? badge(`${t.missing} missing`, "missing") : null, " ",
        t.needs_output_schema ? badge(`${t.needs_output_schema} need an output schema`, "needs_output_schema") : null),
    ));
  render(
    h("h1", {}, "Tools"),
    rows.length
      ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Tool"), h("th", {}, "Kind"), h("th", {}, "Operations"))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No tools yet: create one with POST /api/tools."),
    page.next ? h("p", { class: "muted" }, "More tools exist than this page shows.") : null,
  );
}

async function toolPage(id) {
  const [tool, testing] = await Promise.all([api("GET", `/api/tools/${id}`), api("GET", `/api/tools/${id}/testing`)]);
  const marks = new Map(tool.operations.map((o) => [o.id, o.verification]));
  const rows = testing.operations.map((op) => {
    const mark = marks.get(op.id);
    return h("tr", { "data-operation": op.name },
      h("td", {}, h("a", { href: `#/tools/${id}/operations/${op.id}` }, op.name)),
      h("td", {}, badge(op.status)),
      h("td", { class: "mono" }, shortHash(op.contract_hash)),
      h("td", {}, op.latest_revision ? `revision ${op.latest_revision.revision} by ${op.latest_revision.author}` : "—"),
      h("td", { class: "verified" }, mark ? h("span", { title: `verification ${mark.verification_id}, ${when(mark.verified_at)}` }, badge(mark.verdict),
        mark.divergences ? ` ${mark.divergences} divergence${mark.divergences === 1 ? "" : "s"}` : "") : h("span", { class: "muted" }, "—")));
  });
  const status = h("div", {});
  const discover = tool.kind === "mcp"
    ? h("button", {
        class: "secondary",
        onclick: async (event) => {
          event.target.disabled = true;
          try {
            const result = await api("POST", `/api/tools/${id}/discover`, {});
            status.replaceChildren(notice(result.stale.length ? "warn" : "ok",
              result.stale.length ? `Re-discovered: ${result.stale.map((s) => s.name).join(", ")} went stale.` : "Re-discovered: nothing changed."));
          } catch (error) {
            status.replaceChildren(errorNotice(error));
          }
          event.target.disabled = false;
        },
      }, "Re-discover from the MCP server")
    : null;
  const verification = h("div", { id: "verification" });
  render(
    h("p", {}, h("a", { href: "#/tools" }, "← Tools")),
    h("h1", {}, `Tool ${tool.name}`),
    h("p", { class: "muted" }, `${tool.kind} tool · ${tool.operations.length} operation(s)`),
    discover ? h("p", {}, discover) : null,
    status,
    h("table", { id: "operations" }, h("thead", {}, h("tr", {}, h("th", {}, "Operation"), h("th", {}, "Status"), h("th", {}, "Contract hash"), h("th", {}, "Latest revision"), h("th", {}, "Verified"))), h("tbody", {}, rows)),
    verification,
  );
  await verificationSection(id, verification);
}

// ---- Verifications: the mocks against the real tool --------------------------

/** A divergence's value, short. */
const shortValue = (value) => (value === undefined ? "—" : JSON.stringify(value).slice(0, 120));

/** What one verification found: per operation, its drift and each divergence by pointer. */
function verificationDetails(verification) {
  if (verification.status === "failed") return notice("bad", h("strong", {}, "The verification could not run: "), verification.error || "");
  if (verification.status !== "finished") return notice("info", `The verification is ${verification.status}; a worker runs it.`);
  const parts = [];
  for (const r of verification.results || []) {
    const report = r.report || {};
    const drift = report.drift || {};
    const changes = [];
    for (const member of ["input_schema", "output_schema"]) {
      for (const c of (drift.diff && drift.diff[member]) || []) changes.push(h("li", {}, h("code", {}, `${member}${c.path || ""}`), ` ${c.change}`));
    }
    const rows = [];
    for (const check of report.checks || []) {
      for (const d of check.divergences || []) {
        rows.push(h("tr", {},
          h("td", {}, check.name),
          h("td", { class: "path mono" }, d.path || "/"),
          h("td", {}, badge(d.kind, "diverged")),
          h("td", { class: "mono" }, shortValue(d.mock)),
          h("td", { class: "mono" }, shortValue(d.real)),
          h("td", {}, d.message)));
      }
    }
    const checks = report.checks || [];
    const count = (status) => checks.filter((c) => c.status === status).length;
    parts.push(h("div", { class: "card", "data-result": r.operation },
      h("h3", {}, `${r.operation} `, badge(r.verdict), " ", h("span", { class: "muted" }, r.revision ? `revision ${r.revision}` : "no mock")),
      h("p", {}, "Contract ", badge(drift.status || "unchecked"), drift.from ? ` (from ${drift.from})` : "", drift.message ? ` — ${drift.message}` : "",
        ` · replayed: ${count("agreed")} agreed, ${count("diverged")} diverged, ${count("failed")} failed, ${count("skipped")} not called`),
      changes.length ? h("ul", { class: "diff" }, changes) : null,
      rows.length ? h("div", { class: "table-box" }, h("table", { class: "divergences" },
        h("thead", {}, h("tr", {}, h("th", {}, "Call"), h("th", {}, "Pointer"), h("th", {}, "Kind"), h("th", {}, "Mock"), h("th", {}, "Real"), h("th", {}, "Why"))),
        h("tbody", {}, rows))) : null));
  }
  return h("div", {}, ...parts);
}

async function verificationSection(id, area) {
  const [settings, page] = await Promise.all([api("GET", `/api/tools/${id}/verification`), api("GET", `/api/tools/${id}/verifications?limit=10`)]);
  const safe = settings.settings.verify && settings.settings.verify.safe;
  const safeText = safe === true ? "every operation" : Array.isArray(safe) && safe.length ? safe.join(", ") : "none (only the contracts are compared)";
  const detail = h("div", { id: "verification-detail" });
  const outcome = h("div", {});
  const show = async (verificationId) => {
    detail.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    const verification = await api("GET", `/api/tools/${id}/verifications/${verificationId}`);
    detail.replaceChildren(h("h3", {}, `Verification of ${when(verification.queued_at)}`), verificationDetails(verification));
    return verification;
  };
  const follow = async (verificationId) => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const verification = await show(verificationId);
      if (verification.status === "finished" || verification.status === "failed" || Date.now() > deadline) return verification;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  };
  const rows = page.verifications.map((v) =>
    h("tr", {},
      h("td", {}, h("a", { href: "#", onclick: (event) => { event.preventDefault(); show(v.id).catch((e) => detail.replaceChildren(errorNotice(e))); } }, when(v.queued_at))),
      h("td", {}, badge(v.status)),
      h("td", {}, v.ok === true ? badge("agreed") : v.ok === false ? badge("diverged", "diverged") : "—"),
      h("td", {}, v.requested_by)));
  const verify = h("button", {
    id: "verify-now",
    onclick: async (event) => {
      event.target.disabled = true;
      try {
        const queued = await api("POST", `/api/tools/${id}/verifications`, {});
        outcome.replaceChildren(notice("info", "Queued: a worker runs it."));
        const done = await follow(queued.id);
        outcome.replaceChildren(notice(done.ok ? "ok" : "warn", done.status === "failed" ? "The verification could not run." : done.ok ? "The mocks agree with the real tool." : "The real tool and its mocks disagree: see below."));
        await toolPage(id);
      } catch (error) {
        outcome.replaceChildren(errorNotice(error));
      }
      event.target.disabled = false;
    },
  }, "Verify now");
  area.replaceChildren(
    h("h2", {}, "Verification against the real tool"),
    h("dl", { class: "kv" },
      h("dt", {}, "safe to call"), h("dd", {}, safeText),
      h("dt", {}, "schedule"), h("dd", {}, settings.every_seconds ? `every ${settings.every_seconds} s, next ${when(settings.next_due_at)}` : "on request only"),
      settings.settings.sandbox_url ? [h("dt", {}, "staging copy"), h("dd", { class: "mono" }, settings.settings.sandbox_url)] : null),
    h("p", { class: "muted" }, "Set with PUT /api/tools/{id}/verification (docs/verify.md). Nothing not marked safe is ever called."),
    h("p", {}, verify),
    outcome,
    rows.length
      ? h("table", { id: "verifications" }, h("thead", {}, h("tr", {}, h("th", {}, "Queued"), h("th", {}, "Status"), h("th", {}, "Result"), h("th", {}, "By"))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "Not verified yet."),
    detail,
  );
  const latest = page.verifications[0];
  if (latest) await show(latest.id);
}

function diffList(diff) {
  if (!diff) return h("p", { class: "muted" }, "The contract this revision was saved against is not known.");
  const items = [];
  const change = (where, c) => {
    const what = c.change === "added" ? `added ${JSON.stringify(c.new)}` : c.change === "removed" ? `removed ${JSON.stringify(c.old)}` : `${JSON.stringify(c.old)} → ${JSON.stringify(c.new)}`;
    items.push(h("li", {}, h("code", {}, `${where}${c.path || ""}`), " ", what));
  };
  for (const c of diff.input_schema || []) change("input_schema", c);
  for (const c of diff.output_schema || []) change("output_schema", c);
  if (diff.description) items.push(h("li", {}, "description changed"));
  if (diff.identity) items.push(h("li", {}, "identity changed"));
  return h("div", {},
    h("p", {}, "Saved against ", h("code", {}, shortHash(diff.old_hash)), "; the contract is now ", h("code", {}, shortHash(diff.new_hash)), ". What changed:"),
    h("ul", { class: "diff" }, items));
}

async function operationPage(toolId, operationId) {
  const [testing, history] = await Promise.all([
    api("GET", `/api/tools/${toolId}/testing`),
    api("GET", `/api/tools/${toolId}/operations/${operationId}/revisions`),
  ]);
  const op = testing.operations.find((o) => o.id === operationId);
  if (!op) throw new ApiError(404, { error: { code: "not_found", message: "no such operation" } });
  // The hash the editor's definition is written against: a save sends it, so
  // a contract that changed meanwhile answers 409 instead of saving blind.
  let editingAgainst = op.contract_hash;
  let provenance = "authored";
  let lastInstructions = null;
  const editor = h("textarea", { id: "definition", spellcheck: "false", "aria-label": "Mock definition (JSON)" });
  const diagnostics = h("div", { id: "diagnostics" });
  const outcome = h("div", { id: "outcome" });
  const instructions = h("input", { type: "text", id: "instructions", placeholder: "Instructions for the generator (optional)" });
  let latest = null;
  if (op.latest_revision) {
    latest = await api("GET", `/api/tools/${toolId}/operations/${operationId}/revisions/${op.latest_revision.revision}`);
    editor.value = JSON.stringify(latest.definition, null, 2);
  }

  let checkTimer = null;
  const check = async () => {
    let definition;
    try {
      definition = JSON.parse(editor.value);
    } catch (error) {
      diagnostics.replaceChildren(h("ul", { class: "diagnostics" }, h("li", {}, h("span", { class: "path" }, "JSON"), error.message)));
      return;
    }
    if (!op.contract) return;
    const tool = {
      name: testing.tool_name,
      operations: [{
        name: op.name,
        source: op.contract.operation.source,
        description: op.contract.description || "",
        input_schema: op.contract.input_schema,
        output_schema: op.contract.output_schema,
      }],
    };
    try {
      const result = await api("POST", "/api/tools/testing", { action: "check", tool, operation_id: op.name, definition });
      diagnostics.replaceChildren(result.ok
        ? notice("ok", `The definition passes its check against contract ${shortHash(op.contract_hash)}.`)
        : h("ul", { class: "diagnostics" }, result.diagnostics.map((d) =>
            h("li", { class: d.severity === "warning" ? "warning" : "" },
              h("a", { href: "#", class: "path mono", title: "Show it in the editor", onclick: (event) => { event.preventDefault(); selectPointer(editor, d.path || ""); } }, d.path || "/"),
              `${d.code}: ${d.message}`))));
    } catch (error) {
      diagnostics.replaceChildren(errorNotice(error));
    }
  };
  editor.addEventListener("input", () => {
    provenance = "authored";
    clearTimeout(checkTimer);
    checkTimer = setTimeout(check, 300);
  });

  const generate = async () => {
    outcome.replaceChildren(h("p", { class: "muted" }, "Generating…"));
    const fresh = await api("GET", `/api/tools/${toolId}/testing`);
    const now = fresh.operations.find((o) => o.id === operationId);
    const wanted = instructions.value.trim() || null;
    const result = await api("POST", `/api/tools/${toolId}/testing`, { action: "generate", operation_id: operationId, instructions: wanted });
    if (result.outcome === "draft") {
      editor.value = JSON.stringify(result.definition, null, 2);
      editingAgainst = result.contract_hash || now.contract_hash;
      provenance = "generated";
      lastInstructions = wanted;
      outcome.replaceChildren(notice("info", `A checked draft for contract ${shortHash(editingAgainst)} is in the editor. Review it, then save.`));
      await check();
    } else {
      const problems = result.problems || result.diagnostics || [];
      outcome.replaceChildren(notice("warn", h("strong", {}, result.outcome), " — this operation needs an authored mock:",
        h("ul", { class: "diagnostics" }, problems.map((p) => h("li", { class: "warning" }, h("span", { class: "path mono" }, p.path || "/"), `${p.code}: ${p.message}`)))));
    }
  };

  const save = async () => {
    let definition;
    try {
      definition = JSON.parse(editor.value);
    } catch (error) {
      outcome.replaceChildren(notice("bad", `The editor does not hold JSON: ${error.message}`));
      return;
    }
    const body = { action: "save", operation_id: operationId, contract_hash: editingAgainst, definition, provenance };
    if (provenance === "generated" && lastInstructions) body.instructions = lastInstructions;
    try {
      const saved = await api("POST", `/api/tools/${toolId}/testing`, body);
      outcome.replaceChildren(notice("ok", `Saved revision ${saved.revision}.`));
      await operationPage(toolId, operationId);
      document.getElementById("outcome").replaceChildren(notice("ok", `Saved revision ${saved.revision}. The operation is now ${(await currentStatus(toolId, operationId))}.`));
    } catch (error) {
      if (error.code === "contract_changed") {
        const current = error.details && error.details.current_hash;
        outcome.replaceChildren(notice("warn",
          h("strong", {}, "Not saved: the contract changed (409 contract_changed). "),
          `This definition was written against contract ${shortHash(editingAgainst)}, but the operation's contract is now ${shortHash(current)}: its schema was corrected while you edited. `,
          "Saving it would pin a mock to a contract the tool no longer has. Regenerate a draft against the current contract, review it, and save that.",
          h("div", {}, h("button", { id: "regenerate-409", onclick: () => generate().catch((e) => outcome.replaceChildren(errorNotice(e))) }, "Regenerate against the current contract"))));
      } else {
        outcome.replaceChildren(errorNotice(error));
      }
    }
  };

  const rows = history.map((r) =>
    h("tr", {},
      h("td", {}, `${r.revision}`),
      h("td", {}, r.contract_hash === op.contract_hash ? badge("current") : badge("stale")),
      h("td", {}, r.author),
      h("td", {}, r.provenance, r.instructions ? ` (“${r.instructions}”)` : ""),
      h("td", {}, when(r.created_at)),
      h("td", { class: "mono" }, shortHash(r.definition_hash)),
    ));

  render(
    h("p", {}, h("a", { href: `#/tools/${toolId}` }, `← ${testing.tool_name}`)),
    h("h1", {}, `${testing.tool_name} / ${op.name} `, badge(op.status)),
    op.status === "stale"
      ? h("div", { class: "notice warn", id: "why-stale" }, h("h2", {}, "Why it is stale"),
          h("p", {}, `Revision ${op.latest_revision.revision} answers an older contract. A simulation refuses to start with a stale mock, so regenerate or edit it and save.`),
          diffList(op.stale_diff))
      : null,
    op.status === "needs_output_schema" ? notice("bad", "This operation has no output schema, so it cannot be mocked. Give the tool an output schema.") : null,
    h("div", { class: "row" },
      h("div", { class: "grow" },
        h("h2", {}, "Definition"),
        editor,
        h("p", {}, instructions),
        h("p", { class: "row" },
          h("button", { id: "generate", class: "secondary", onclick: () => generate().catch((e) => outcome.replaceChildren(errorNotice(e))) }, "Generate"),
          h("button", { id: "save", onclick: save, disabled: !op.contract_hash }, "Save")),
        outcome,
        h("h2", {}, "Check"),
        diagnostics),
      h("div", { class: "grow" },
        h("h2", {}, "Contract"),
        h("dl", { class: "kv" },
          h("dt", {}, "hash"), h("dd", { class: "mono", id: "contract-hash" }, op.contract_hash || "— (needs an output schema)"),
          h("dt", {}, "source"), h("dd", {}, op.source)),
        op.contract ? json(op.contract) : null,
        h("h2", {}, "Revision history"),
        rows.length
          ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Against"), h("th", {}, "Author"), h("th", {}, "Provenance"), h("th", {}, "Saved"), h("th", {}, "Definition"))), h("tbody", {}, rows))
          : h("p", { class: "muted" }, "No revision yet: generate a draft or write one, then save."))),
  );
  if (editor.value) await check();
}

/**
 * Selects in the editor the member a JSON pointer names: each named segment
 * is looked for after the previous one, so `/variants/ok/result` finds
 * `"result"` inside `"ok"` inside `"variants"` (array indexes are skipped).
 */
function selectPointer(editor, pointer) {
  const text = editor.value;
  let from = 0;
  let found = null;
  for (const raw of pointer.split("/").slice(1)) {
    const segment = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^\d+$/.test(segment)) continue;
    const key = JSON.stringify(segment);
    const at = text.indexOf(key, from);
    if (at < 0) break;
    found = [at, at + key.length];
    from = at + key.length;
  }
  if (!found) return;
  editor.focus();
  editor.setSelectionRange(found[0], found[1]);
}

async function currentStatus(toolId, operationId) {
  const testing = await api("GET", `/api/tools/${toolId}/testing`);
  const op = testing.operations.find((o) => o.id === operationId);
  return op ? op.status : "unknown";
}

// ---- Simulations -----------------------------------------------------------

function progress(s) {
  const part = (n, kind) => (n ? h("span", { class: kind, style: `width:${(100 * n) / Math.max(s.attempt_count, 1)}%` }) : null);
  return h("div", { class: "progress", title: `${s.passed} passed, ${s.failed} failed, ${s.harness_error} harness errors, ${s.queued || 0} queued, ${s.running} running` },
    part(s.passed, "passed"), part(s.failed, "failed"), part(s.harness_error, "harness_error"));
}

function counts(s) {
  return h("span", {}, badge(`${s.passed} passed`, "passed"), " ", badge(`${s.failed} failed`, "failed"), " ",
    badge(`${s.harness_error} harness errors`, "harness_error"), " ", s.queued ? badge(`${s.queued} queued`, "queued") : null, " ",
    s.running ? badge(`${s.running} running`, "running") : null);
}

async function simulationsPage() {
  const page = await api("GET", "/api/simulations?limit=100");
  const area = h("textarea", { id: "document", spellcheck: "false", "aria-label": "Simulation document (JSON)", placeholder: '{"simulation_version": 1, "name": "…", "tools": […], "agent": {…}, "cases": […]}' });
  const result = h("div", {});
  const start = async () => {
    let document;
    try {
      document = JSON.parse(area.value);
    } catch (error) {
      result.replaceChildren(notice("bad", `Not JSON: ${error.message}`));
      return;
    }
    try {
      const started = await api("POST", "/api/simulations", document);
      location.hash = `#/simulations/${started.id}`;
    } catch (error) {
      result.replaceChildren(errorNotice(error));
    }
  };
  const rows = page.simulations.map((s) =>
    h("tr", {},
      h("td", {}, h("a", { href: `#/simulations/${s.id}` }, s.name || s.id)),
      h("td", {}, badge(s.status)),
      h("td", {}, counts(s)),
      h("td", {}, when(s.created_at))));
  render(
    h("h1", {}, "Simulations"),
    rows.length
      ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Simulation"), h("th", {}, "Status"), h("th", {}, "Attempts"), h("th", {}, "Started"))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No simulations yet."),
    h("h2", {}, "Start a simulation"),
    h("p", { class: "muted" }, "Paste a simulation document (docs/simulations.md); library tools are referenced as {\"from\": \"library\", \"id\": …}."),
    area,
    h("p", {}, h("button", { id: "start", onclick: start }, "Start")),
    result,
  );
}

function attemptRow(a) {
  const unmet = Array.isArray(a.unmet) && a.unmet.length ? h("ul", { class: "diagnostics" }, a.unmet.map((u) => h("li", { class: "warning" }, h("span", { class: "path mono" }, u.at), `${u.code}: ${u.message}`))) : null;
  return h("tr", { "data-attempt": a.id },
    h("td", {}, h("a", { href: `#/attempts/${a.id}` }, `${a.test_case} #${a.number}`)),
    h("td", {}, a.driver ? badge(a.driver) : "—"),
    h("td", {}, a.outcome ? badge(a.outcome) : badge(a.status === "queued" ? "queued" : "running")),
    h("td", {}, a.expected_outcome || "—", a.as_expected === false ? h("span", {}, " ", badge("unexpected", "error")) : null),
    h("td", {}, `${a.calls}`),
    h("td", {}, unmet));
}

async function simulationPage(id) {
  const view = await api("GET", `/api/simulations/${id}`);
  const summary = h("div", { id: "summary" });
  const tbody = h("tbody", {});
  const live = h("p", { class: "muted", id: "live" });
  const paint = (s, attempts) => {
    summary.replaceChildren(
      h("p", {}, badge(s.status, s.status), " ", counts(s)),
      progress(s));
    if (attempts) tbody.replaceChildren(...attempts.map(attemptRow));
  };
  paint(view, view.attempts);
  const pins = view.pins.map((p) =>
    h("tr", {}, h("td", {}, `${p.tool}/${p.operation}`), h("td", {}, p.kind === "unpinned" ? badge("unpinned", "missing") : p.kind),
      h("td", {}, p.revision ? `revision ${p.revision}` : p.unpinned_reason || "—"), h("td", { class: "mono" }, shortHash(p.definition_hash))));
  // The shared fixtures every attempt started from, by their sha256.
  const fixtures = view.fixtures_hash
    ? h("p", { id: "fixtures" }, h("span", { class: "muted" }, "Shared fixtures "), h("code", { title: view.fixtures_hash }, `sha256 ${shortHash(view.fixtures_hash)}`))
    : null;
  render(
    h("p", {}, h("a", { href: "#/simulations" }, "← Simulations")),
    h("h1", {}, `Simulation ${view.name || view.id}`),
    summary,
    fixtures,
    live,
    h("h2", {}, "Attempts"),
    h("table", { id: "attempts" }, h("thead", {}, h("tr", {}, h("th", {}, "Attempt"), h("th", {}, "Driver"), h("th", {}, "Outcome"), h("th", {}, "Expected"), h("th", {}, "Calls"), h("th", {}, "Unmet expectations"))), tbody),
    h("p", {}, h("a", { href: `#/simulations/${id}/coverage`, id: "coverage-link" }, "Coverage report →")),
    h("h2", {}, "Pins"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Operation"), h("th", {}, "Pin"), h("th", {}, "Revision"), h("th", {}, "Definition"))), h("tbody", {}, pins)),
  );
  if (view.status === "finished") return;
  // Live progress: the events stream, until the simulation finishes or the page is left.
  const controller = new AbortController();
  leaving = () => controller.abort();
  const rows = new Map(view.attempts.map((a) => [a.id, a]));
  live.textContent = "Following live…";
  followEvents(`/api/simulations/${id}/events`, (name, data) => {
    if (name === "snapshot") {
      for (const a of data.attempts) rows.set(a.id, a);
      paint(data.simulation, [...rows.values()]);
    } else if (name === "attempt") {
      rows.set(data.id, data);
      tbody.replaceChildren(...[...rows.values()].map(attemptRow));
    } else if (name === "finished") {
      paint(data, [...rows.values()]);
      live.textContent = "Finished.";
    }
  }, controller.signal).catch((error) => {
    if (error.name !== "AbortError") live.replaceChildren(errorNotice(error));
  });
}

async function coveragePage(id) {
  const [view, report] = await Promise.all([api("GET", `/api/simulations/${id}`), api("GET", `/api/simulations/${id}/coverage`)]);
  const rows = report.operations.map((op) =>
    h("tr", {},
      h("td", {}, `${op.tool}/${op.operation}`),
      h("td", {}, op.pin),
      h("td", {}, `${op.calls}`),
      h("td", {}, op.variants.map((v) => h("div", {}, h("code", {}, v.name), `: ${v.calls} call(s)`, v.failed ? `, ${v.failed} failed` : "",
        v.rules.length ? ` · rules ${v.rules.map((n, i) => `#${i}×${n}`).join(" ")}` : ""))),
      h("td", {}, op.never.length ? op.never.map((n) => h("div", {}, badge(n, "missing"))) : badge("all exercised", "current"))));
  render(
    h("p", {}, h("a", { href: `#/simulations/${id}` }, `← ${view.name || id}`)),
    h("h1", {}, "Coverage report"),
    h("p", { class: "muted" }, `Over ${report.attempts} finished attempt(s).`),
    h("div", { class: "table-box" }, h("table", { id: "coverage" }, h("thead", {}, h("tr", {}, h("th", {}, "Operation"), h("th", {}, "Pin"), h("th", {}, "Calls"), h("th", {}, "Variants"), h("th", {}, "Never exercised"))), h("tbody", {}, rows))),
  );
}

// ---- An attempt's timeline -------------------------------------------------

/** A user's or the assistant's turn of a model-driven attempt, as text. */
function messageItem(m) {
  const who = m.role === "assistant" ? "Assistant" : "User";
  const body = [];
  if (m.content) body.push(h("p", { class: "say" }, m.content));
  if (m.tool_calls && m.tool_calls.length) {
    body.push(h("ul", { class: "asks" }, m.tool_calls.map((c) =>
      h("li", {}, "calls ", h("code", {}, c.name), " with ", h("code", {}, c.arguments)))));
  }
  // A simulated user's message that ended the conversation names its marker.
  const stop = m.stop ? badge(`stop ${m.stop}`, "message") : null;
  return h("li", { class: `message ${m.role}` }, h("div", { class: "head" }, h("strong", {}, who), badge(m.role, "message"), stop), ...body);
}

async function attemptPage(id) {
  const a = await api("GET", `/api/attempts/${id}`);
  // A model-driven attempt's turns stand between its calls, in the order
  // they happened (the tool messages repeat the calls' results: left out).
  const turns = (a.conversation || []).filter((m) => m.role === "user" || m.role === "assistant");
  const entries = [
    ...a.evidence.map((e) => ({ at: e.started_at, kind: e.status === "domain_error" ? "domain_error" : "ok", e })),
    ...a.tool_input_errors.map((e) => ({ at: e.at, kind: "tool_input_error", e })),
    ...a.harness_errors.map((e) => ({ at: e.at, kind: "harness_error", e })),
    ...turns.map((e) => ({ at: e.at, kind: "message", e })),
  ].sort((x, y) => (x.at < y.at ? -1 : x.at > y.at ? 1 : 0));
  // A harness error that names no call (an expired lease) is on the timeline
  // but is not a call: the count matches the attempts table's "calls".
  const calls = entries.filter(({ kind, e }) => kind !== "message" && e.tool).length;
  let n = 0;
  const items = entries.map(({ kind, e }) => {
    if (kind === "message") return messageItem(e);
    n += 1;
    const title = e.tool ? `${e.tool}/${e.operation}` : "(no call)";
    // Evidence: a result, or a domain error the mock answered (the agent's
    // tool error; the state is unchanged).
    const answered = kind === "ok" || kind === "domain_error";
    const how = h("span", { class: "muted" }, `variant ${e.variant}${e.rule !== null && e.rule !== undefined ? `, rule ${e.rule}` : ""} · ${e.delay_ms} ms simulated`);
    // In a conversation every call says whose it is: a simulated user's
    // own tool, or the agent's.
    const actor = e.actor === "user" ? badge("user's call", "message")
      : turns.length && e.actor === "agent" ? badge("agent's call", "message") : null;
    const head = h("div", { class: "head" }, h("strong", {}, `${n}. ${title}`), actor, badge(kind === "domain_error" ? "domain error" : kind, kind),
      kind === "domain_error" ? h("code", {}, e.error.code) : null, answered ? how : h("code", {}, e.code));
    const body = [h("div", {}, h("span", { class: "muted" }, "arguments"), json(e.arguments))];
    if (answered) {
      body.push(kind === "domain_error"
        ? h("div", {}, h("span", { class: "muted" }, "domain error"), json(e.error))
        : h("div", {}, h("span", { class: "muted" }, "result"), json(e.result)));
      body.push(h("div", { class: "states" },
        h("div", {}, h("span", { class: "muted" }, `state before (version ${e.version_before})`), json(e.state_before)),
        h("div", {}, h("span", { class: "muted" }, `state after (version ${e.version_after})`), json(e.state_after))));
    } else {
      body.unshift(h("p", {}, e.message, e.path ? h("span", {}, " at ", h("code", {}, e.path)) : null));
    }
    return h("li", { class: kind }, head, ...body);
  });
  const unmet = Array.isArray(a.unmet) && a.unmet.length
    ? h("ul", { class: "diagnostics" }, a.unmet.map((u) => h("li", { class: "warning" }, h("span", { class: "path mono" }, u.at), `${u.code}: ${u.message}`)))
    : null;
  render(
    h("p", {}, h("a", { href: `#/simulations/${a.simulation}` }, "← Simulation")),
    h("h1", {}, `Attempt ${a.test_case} #${a.number} `, a.outcome ? badge(a.outcome) : badge(a.status === "queued" ? "queued" : "running")),
    a.has_harness_error ? notice("bad", "A harness error was recorded: this attempt can never pass. Harness errors are faults of the mocks or of toolmock, not of the agent.") : null,
    a.expected_outcome ? h("p", {}, `Its case expects `, h("strong", {}, a.expected_outcome), a.as_expected === true ? " — as expected." : a.as_expected === false ? " — not what happened." : ".") : null,
    unmet ? h("div", {}, h("h2", {}, "Unmet expectations"), unmet) : null,
    a.judge ? h("div", { id: "judge" }, h("h2", {}, "Judge"), h("p", {}, badge(a.judge.verdict === "pass" ? "passed" : "failed"), ` score ${a.judge.score}: `, a.judge.reasoning)) : null,
    h("h2", {}, `Timeline (${calls} call${calls === 1 ? "" : "s"})`),
    entries.length ? h("ol", { class: "timeline", id: "timeline" }, items) : h("p", { class: "muted" }, "No calls recorded."),
    h("h2", {}, `Final state (version ${a.state.version})`),
    json(a.state.state),
  );
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);
