// toolmock's UI in a real browser: headless Debian Chromium driven by
// playwright-core, against the real toolmock-api binary and PostgreSQL
// (scripts/ui-tests.sh starts them and passes TOOLMOCK_URL, TOOLMOCK_TOKEN and
// TOOLMOCK_SCREENSHOTS). Every page is photographed into
// target/ui-screenshots/, and each picture is checked: not blank, and the
// page's expected heading present when it was taken.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { createServer } from "node:http";
import { chromium } from "playwright-core";

const base = required("TOOLMOCK_URL");
const bearer = required("TOOLMOCK_TOKEN");
const shots = required("TOOLMOCK_SCREENSHOTS");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const notes = JSON.parse(readFileSync(new URL("../fixtures/api/notes-simulation.json", import.meta.url), "utf8"));

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run scripts/ui-tests.sh`);
  return value;
}

async function api(method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${bearer}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const parsed = await response.json();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

// ---- PNG reading, to tell a rendered page from a blank one ------------------

/** Decodes an 8-bit RGB(A) PNG into {width, height, channels, pixels}. */
function decodePng(bytes) {
  assert.equal(bytes.subarray(0, 8).toString("hex"), "89504e470d0a1a0a", "a PNG signature");
  let offset = 8;
  let width, height, colorType, bitDepth;
  const data = [];
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.subarray(offset + 4, offset + 8).toString("ascii");
    const body = bytes.subarray(offset + 8, offset + 8 + length);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      bitDepth = body[8];
      colorType = body[9];
    } else if (type === "IDAT") data.push(body);
    offset += 12 + length;
  }
  assert.equal(bitDepth, 8, "8-bit channels");
  const channels = { 2: 3, 6: 4 }[colorType];
  assert.ok(channels, `colour type ${colorType} is RGB or RGBA`);
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? pixels[y * stride + x - channels] : 0;
      const up = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const upLeft = y > 0 && x >= channels ? pixels[(y - 1) * stride + x - channels] : 0;
      let value = line[x];
      if (filter === 1) value += left;
      else if (filter === 2) value += up;
      else if (filter === 3) value += (left + up) >> 1;
      else if (filter === 4) {
        const p = left + up - upLeft;
        const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
        value += pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      }
      pixels[y * stride + x] = value & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

/** The share of pixels that differ from the most common colour. */
function inkShare(png) {
  const counts = new Map();
  const n = png.width * png.height;
  for (let i = 0; i < n; i++) {
    const at = i * png.channels;
    const key = (png.pixels[at] << 16) | (png.pixels[at + 1] << 8) | png.pixels[at + 2];
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  const background = Math.max(...counts.values());
  return { share: (n - background) / n, colours: counts.size };
}

let browser, page;
const taken = [];
const pageErrors = [];

/** Photographs the page once `heading` is showing and checks the picture. */
async function shoot(name, heading) {
  await page.getByRole("heading", { name: heading }).first().waitFor();
  const path = join(shots, `${name}.png`);
  const bytes = await page.screenshot({ path, fullPage: true });
  const { share, colours } = inkShare(decodePng(bytes));
  assert.ok(share > 0.02 && colours > 16, `${name}.png looks blank (${(share * 100).toFixed(1)} % ink, ${colours} colours)`);
  taken.push(name);
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("pageerror", (error) => pageErrors.push(error.message));
});

after(async () => {
  await browser?.close();
});

// ---- The data the pages show, made through the public API -------------------

const day = { type: "object", properties: { day: { type: "string" } }, required: ["day"] };
const reference = { type: "object", properties: { reference: { type: "string" } }, required: ["reference"] };
const bookDefinition = {
  schema_version: 1,
  default_variant: "booked",
  variants: { booked: { result: { reference: "APPT-1" } } },
  examples: [{ variant: "booked", input: { day: "2026-01-02" }, expected: { reference: "APPT-1" } }],
};

async function seedTool(name, op) {
  const tool = await api("POST", "/api/tools", {
    name,
    source: { type: "custom", operations: [{ name: op, description: "Book a visit", input_schema: day, output_schema: reference }] },
  });
  const operation = tool.operations[0];
  await api("POST", `/api/tools/${tool.id}/testing`, {
    action: "save", operation_id: operation.id, contract_hash: operation.contract_hash, definition: bookDefinition,
  });
  return { tool, operation };
}

/** Corrects the operation's input schema: its saved mock goes stale. */
async function correctSchema(tool, op) {
  const corrected = { ...day, properties: { day: { type: "string", format: "date" }, time: { type: "string" } } };
  return api("PUT", `/api/tools/${tool.id}`, {
    source: { type: "custom", operations: [{ name: op, description: "Book a visit", input_schema: corrected, output_schema: reference }] },
  });
}

// ---- The flows ------------------------------------------------------------------

test("sign in with a pasted development token", async () => {
  await page.goto(base + "/");
  await shoot("sign-in", "Sign in");
  await page.locator("#token").fill(bearer);
  await page.locator("#sign-in").click();
  await shoot("tools-empty", "Tools");
});

test("a stale operation says why; regenerate, save, and it is current", async () => {
  const { tool } = await seedTool("clinic", "book");
  const updated = await correctSchema(tool, "book");
  assert.equal(updated.stale.length, 1);
  await page.goto(base + "/#/tools");
  await page.reload();
  await shoot("tools", "Tools");
  await page.getByRole("link", { name: "clinic" }).click();
  await shoot("tool", "Tool clinic");
  assert.match(await page.locator("tr", { hasText: "book" }).innerText(), /stale/);
  await page.getByRole("link", { name: "book" }).click();
  await shoot("operation-stale", "clinic / book");
  const why = await page.locator("#why-stale").innerText();
  assert.match(why, /Why it is stale/);
  assert.match(why, /input_schema\/properties\/day\/format/, why);
  assert.match(why, /input_schema\/properties\/time/, why);
  await page.locator("#generate").click();
  await page.getByText("A checked draft for contract").waitFor();
  await page.getByText("The definition passes its check against contract").waitFor();
  await page.locator("#save").click();
  await page.getByText(/Saved revision 2\. The operation is now current/).waitFor();
  await shoot("operation-saved", "clinic / book");
  assert.match(await page.locator("h1").innerText(), /current/);
  // The history keeps revision 1, now marked as answering an older contract.
  const history = await page.locator("table").last().innerText();
  assert.match(history, /^1\s/m);
});

test("check-as-you-type points at the path of each problem", async () => {
  const editor = page.locator("#definition");
  const text = await editor.inputValue();
  const broken = JSON.parse(text);
  broken.default_variant = "nowhere";
  await editor.fill(JSON.stringify(broken, null, 2));
  const problem = page.locator("#diagnostics li", { hasText: "/default_variant" });
  await problem.waitFor();
  await shoot("operation-diagnostics", "clinic / book");
  // The problem's path points into the editor.
  await problem.locator("a.path").click();
  const selected = await editor.evaluate((el) => el.value.slice(el.selectionStart, el.selectionEnd));
  assert.equal(selected, '"default_variant"');
});

test("a 409 is explained and recovered from with one click", async () => {
  const { tool, operation } = await seedTool("crm", "find");
  await page.goto(`${base}/#/tools/${tool.id}/operations/${operation.id}`);
  await shoot("operation-current", "crm / find");
  await page.locator("#generate").click();
  await page.getByText("A checked draft for contract").waitFor();
  // Someone corrects the schema while the draft is open.
  await correctSchema(tool, "find");
  await page.locator("#save").click();
  const explained = page.getByText("Not saved: the contract changed (409 contract_changed).");
  await explained.waitFor();
  await shoot("operation-conflict", "crm / find");
  await page.locator("#regenerate-409").click();
  await page.getByText("A checked draft for contract").waitFor();
  await page.locator("#save").click();
  await page.getByText(/Saved revision 2\. The operation is now current/).waitFor();
});

test("start a simulation and watch it finish", async () => {
  await page.goto(`${base}/#/simulations`);
  await shoot("simulations-empty", "Simulations");
  // Each call takes 700 ms of real time (a simulated delay the document asks
  // the worker to sleep for real), so the page opens while the attempts run
  // and follows them live.
  const slow = structuredClone(notes);
  slow.tools[0].definitions.add.variants.ok.delay_ms = 700;
  slow.real_delays = true;
  await page.locator("#document").fill(JSON.stringify(slow));
  await page.locator("#start").click();
  await page.getByRole("heading", { name: "Simulation notes" }).waitFor();
  await page.getByText("Following live…").waitFor();
  // Queued until the worker claims the attempts, then running.
  assert.match(await page.locator("#summary").innerText(), /queued|running/);
  await shoot("simulation-running", "Simulation notes");
  await page.getByText("Finished.").waitFor({ timeout: 60_000 });
  await page.locator("#summary .badge.finished").waitFor();
  await shoot("simulation", "Simulation notes");
  const summary = await page.locator("#summary").innerText();
  assert.match(summary, /2 passed/);
  assert.match(summary, /2 failed/);
  assert.match(summary, /2 harness errors/);
  assert.equal(await page.locator("#attempts tbody tr").count(), 6);
  await page.goto(`${base}/#/simulations`);
  await shoot("simulations", "Simulations");
});

test("a failed attempt's timeline shows its unmet expectation and the state around each call", async () => {
  await page.getByRole("link", { name: "notes" }).first().click();
  await page.getByRole("heading", { name: "Simulation notes" }).waitFor();
  await page.getByRole("link", { name: "expects too much #1" }).click();
  await shoot("attempt-failed", /Attempt expects too much #1/);
  assert.match(await page.locator("h1").innerText(), /failed/);
  const unmet = await page.locator(".diagnostics").first().innerText();
  assert.match(unmet, /\/cases\/1\/expect\/final_state/);
  const timeline = await page.locator("#timeline").innerText();
  assert.match(timeline, /state before \(version 0\)/);
  assert.match(timeline, /state after \(version 1\)/);
});

test("harness errors stand out in the timeline", async () => {
  await page.goBack();
  await page.getByRole("heading", { name: "Simulation notes" }).waitFor();
  // Its only call ended in a harness error: the table counts it as a call,
  // as the timeline does.
  const row = page.locator("#attempts tr", { hasText: "unknown tool #1" });
  assert.equal(await row.locator("td").nth(4).innerText(), "1");
  await page.getByRole("link", { name: "unknown tool #1" }).click();
  await shoot("attempt-harness-error", /Attempt unknown tool #1/);
  assert.equal(await page.locator("#timeline li.harness_error").count(), 1);
  assert.match(await page.locator(".notice.bad").innerText(), /can never pass/);
  const colour = await page.locator("#timeline li.harness_error").evaluate((el) => getComputedStyle(el).borderLeftColor);
  assert.equal(colour, "rgb(179, 38, 30)");
  assert.match(await page.getByRole("heading", { name: /^Timeline/ }).innerText(), /Timeline \(1 call\)/);
});

test("the coverage report", async () => {
  await page.goBack();
  await page.locator("#coverage-link").click();
  await shoot("coverage", "Coverage report");
  assert.match(await page.locator("table").innerText(), /notes\/add/);
});

test("a coverage report of long names keeps the window's width", async () => {
  // Names as long as a platform's are: unbreakable, in three columns at once.
  const long = {
    '"notes"': '"notes_kept_for_the_clinical_operations_team_of_the_north_region"',
    '"add"': '"add_a_note_to_the_shared_notebook_and_answer_the_one_before_it"',
    '"ok"': '"saved_and_answered_with_the_previous_note_of_the_same_notebook"',
  };
  let text = JSON.stringify(notes);
  for (const [from, to] of Object.entries(long)) text = text.replaceAll(from, to);
  const started = await api("POST", "/api/simulations", JSON.parse(text));
  const deadline = Date.now() + 60_000;
  while ((await api("GET", `/api/simulations/${started.id}`)).status !== "finished") {
    assert.ok(Date.now() < deadline, "the simulation finishes within a minute");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await page.goto(`${base}/#/simulations/${started.id}/coverage`);
  await page.getByRole("heading", { name: "Coverage report" }).waitFor();
  await page.locator("#coverage tbody tr").first().waitFor();
  // The page keeps the window's width (1,280 px), and the header spans it.
  const widths = await page.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    window: document.documentElement.clientWidth,
    header: document.querySelector("header.top").getBoundingClientRect().width,
  }));
  assert.ok(widths.page <= widths.window, JSON.stringify(widths));
  assert.equal(widths.header, widths.window, JSON.stringify(widths));
});

test("a model-driven attempt's timeline shows the assistant's turns between the calls", async () => {
  // The API's in-process worker plays it with the local conversation server
  // (scripts/ui-tests.sh): the model adds the note, then answers.
  const add = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
  const document = {
    simulation_version: 1,
    name: "model notes",
    tools: [{
      name: "notes", from: "custom",
      operations: [{ name: "add", description: "Adds a note.", input_schema: add, output_schema: { type: "object", required: ["id"] } }],
      definitions: { add: {
        schema_version: 1, default_variant: "ok", variants: { ok: { result: { id: "n-1" } } },
        examples: [{ variant: "ok", input: { text: "a" }, expected: { id: "n-1" } }],
      } },
    }],
    agent: { name: "scribe", prompt: "You keep notes.", tools: ["notes"] },
    cases: [{
      name: "notes milk",
      driver: { type: "model", messages: ["Note down milk."], max_turns: 4 },
      expect: { final_answer: { contains: ["n-1"] }, judge: { rubric: "The agent adds the note and confirms it with its id." } },
    }],
  };
  const started = await api("POST", "/api/simulations", document);
  assert.equal(started.attempts[0].driver, "model");
  const deadline = Date.now() + 60_000;
  while ((await api("GET", `/api/simulations/${started.id}`)).status !== "finished") {
    assert.ok(Date.now() < deadline, "the simulation finishes within a minute");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await page.goto(`${base}/#/attempts/${started.attempts[0].id}`);
  await shoot("attempt-model", /Attempt notes milk #1/);
  assert.match(await page.locator("h1").innerText(), /passed/);
  const entries = await page.locator("#timeline > li").allInnerTexts();
  assert.equal(entries.length, 4, entries.join("\n---\n"));
  assert.match(entries[0], /User[\s\S]*Note down milk\./);
  assert.match(entries[1], /Assistant[\s\S]*calls notes__add with \{"text": ?"milk"\}/);
  assert.match(entries[2], /1\. notes\/add/);
  assert.match(entries[3], /Assistant[\s\S]*Added note n-1\./);
  assert.equal(await page.locator("#timeline li.message.assistant").count(), 2);
  assert.match(await page.getByRole("heading", { name: /^Timeline/ }).innerText(), /Timeline \(1 call\)/);
  assert.match(await page.locator("#judge").innerText(), /passed[\s\S]*score 0\.9/);
});

test("an external agent's conversation with its simulated user shows who said what", async () => {
  // The agent is this test, through the API's ask-user and tool-call
  // endpoints; the API's user model (the conversation server's
  // customer_tools, scripts/ui-tests.sh) unlocks its phone first, asks for
  // a note, answers the agent's question and stops once the note is added.
  const object = { type: "object" };
  const add = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
  const document = {
    simulation_version: 1,
    name: "asking user",
    tools: [
      { name: "notes", from: "custom",
        operations: [{ name: "add", description: "Adds a note.", input_schema: add, output_schema: { type: "object", required: ["id"] } }],
        definitions: { add: { schema_version: 1, default_variant: "ok", variants: { ok: { result: { id: "n-1" } } },
          examples: [{ variant: "ok", input: { text: "a" }, expected: { id: "n-1" } }] } } },
      { name: "phone", from: "custom",
        operations: [{ name: "unlock", description: "Unlocks the user's phone.", input_schema: object, output_schema: object }],
        definitions: { unlock: { schema_version: 1, default_variant: "ok", variants: { ok: { result: { unlocked: true } } },
          examples: [{ variant: "ok", input: {}, expected: { unlocked: true } }] } } },
    ],
    agent: { name: "scribe", prompt: "You keep notes.", tools: ["notes"] },
    cases: [{
      name: "asks first",
      driver: { type: "external" },
      user: { type: "model", instructions: "You want a note.\nThe note says: milk", tools: ["phone"] },
      expect: { agent_said: { contains: ["n-1"] } },
    }],
  };
  const started = await api("POST", "/api/simulations", document);
  const attempt = started.attempts[0];
  const asCapability = async (path, body) => {
    const response = await fetch(`${base}/api/attempts/${attempt.id}/${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${attempt.capability}`, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const parsed = await response.json();
    assert.ok(response.ok, `${path}: ${response.status} ${JSON.stringify(parsed)}`);
    return parsed;
  };
  assert.deepEqual(await asCapability("ask-user", {}), { reply: "I need a note, please." });
  assert.deepEqual(await asCapability("ask-user", { message: "What should the note say?" }), { reply: "milk" });
  assert.deepEqual(await asCapability("tool-calls", { tool: "notes", operation: "add", arguments: { text: "milk" } }), { id: "n-1" });
  assert.deepEqual(await asCapability("ask-user", { message: "Added note n-1." }),
    { reply: "Thanks! ###STOP###", stop: "###STOP###", ended: true });
  assert.equal((await asCapability("finish")).outcome, "passed");
  await page.goto(`${base}/#/attempts/${attempt.id}`);
  await shoot("attempt-simulated-user", /Attempt asks first #1/);
  const entries = await page.locator("#timeline > li").allInnerTexts();
  assert.equal(entries.length, 8, entries.join("\n---\n"));
  assert.match(entries[0], /User[\s\S]*calls phone__unlock/);
  assert.match(entries[1], /1\. phone\/unlock[\s\S]*user's call/);
  assert.match(entries[2], /User[\s\S]*I need a note, please\./);
  assert.match(entries[3], /Assistant[\s\S]*What should the note say\?/);
  assert.match(entries[4], /User[\s\S]*milk/);
  assert.match(entries[5], /2\. notes\/add[\s\S]*agent's call/);
  assert.match(entries[6], /Assistant[\s\S]*Added note n-1\./);
  assert.match(entries[7], /User[\s\S]*stop ###STOP###[\s\S]*Thanks!/);
  assert.equal(await page.locator("#timeline li.message.user").count(), 4);
});

test("a domain error stands apart in the timeline, and the simulation names its shared fixtures", async () => {
  // An external attempt over a version-2 mock reading a shared fixture: one
  // order found, one answered by the mock's domain error.
  const id = { $input: "order_id" };
  const document = {
    simulation_version: 1,
    name: "orders",
    fixtures: [{ value: { orders: { "#W1": { status: "pending" } } } }],
    tools: [{
      name: "shop", from: "custom",
      operations: [{ name: "get_order", input_schema: { type: "object", required: ["order_id"] }, output_schema: { type: "object" } }],
      definitions: { get_order: {
        schema_version: 2, default_variant: "ok",
        variants: { ok: {
          result: { order: { $state: ["orders", id] } },
          rules: [{ when: [{ source: "state", path: ["orders", id], op: "exists", value: false }],
                    error: { code: "order_not_found", message: "Order not found" } }],
        } },
        examples: [{ variant: "ok", input: { order_id: "#W9" }, state: { orders: {} },
                     expected_error: { code: "order_not_found", message: "Order not found" } }],
      } },
    }],
    agent: { name: "clerk", tools: ["shop"] },
    cases: [{ name: "looks up", driver: { type: "external" } }],
  };
  const started = await api("POST", "/api/simulations", document);
  const attempt = started.attempts[0];
  for (const order of ["#W1", "#W9"]) {
    const response = await fetch(`${base}/api/attempts/${attempt.id}/tool-calls`, {
      method: "POST",
      headers: { Authorization: `Bearer ${attempt.capability}`, "Content-Type": "application/json" },
      body: JSON.stringify({ tool: "shop", operation: "get_order", arguments: { order_id: order } }),
    });
    assert.equal(response.status, order === "#W1" ? 200 : 422, order);
  }
  await page.goto(`${base}/#/attempts/${attempt.id}`);
  await shoot("attempt-domain-error", /Attempt looks up #1/);
  assert.equal(await page.locator("#timeline li.ok").count(), 1);
  const error = page.locator("#timeline li.domain_error");
  assert.equal(await error.count(), 1);
  assert.match(await error.innerText(), /domain error[\s\S]*order_not_found[\s\S]*Order not found/);
  assert.equal(await page.locator("#timeline li.harness_error").count(), 0);
  const view = await api("GET", `/api/simulations/${started.id}`);
  assert.match(view.fixtures_hash, /^[0-9a-f]{64}$/);
  await page.goto(`${base}/#/simulations/${started.id}`);
  await shoot("simulation-fixtures", /Simulation orders/);
  assert.match(await page.locator("#fixtures").innerText(), new RegExp(`sha256 ${view.fixtures_hash.slice(0, 12)}`));
  assert.equal(await page.locator("#fixtures code").getAttribute("title"), view.fixtures_hash);
});

test("a verification against the real tool marks the mock that diverged and shows each divergence by pointer", async () => {
  // The real tool: a small HTTP service whose `book` answers another
  // reference than the mock; it counts what it is called with.
  const calls = [];
  const service = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      calls.push([request.url, JSON.parse(body || "{}")]);
      const answer = request.url === "/book" ? { reference: "REAL-9" } : { cancelled: true };
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(answer));
    });
  });
  await new Promise((resolve) => service.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${service.address().port}`;
  try {
    const { tool } = await seedTool("front desk", "book");
    const settings = await api("PUT", `/api/tools/${tool.id}/verification`, {
      verify: { safe: ["book"] },
      endpoints: { book: `${url}/book` },
      every_seconds: 86400,
    });
    assert.equal(settings.every_seconds, 86400);
    await page.goto(`${base}/#/tools/${tool.id}`);
    await page.getByRole("heading", { name: "Verification against the real tool" }).waitFor();
    assert.match(await page.locator("#verification").innerText(), /safe to call\s+book/);
    assert.match(await page.locator("#verification").innerText(), /every 86400 s/);
    await page.locator("#verify-now").click();
    // The worker ran it: the operation is marked, the divergence shown by its pointer.
    await page.locator('#operations tr[data-operation="book"] .badge.diverged').waitFor({ timeout: 60_000 });
    const result = page.locator('#verification-detail [data-result="book"]');
    await result.waitFor();
    const text = await result.innerText();
    assert.match(text, /diverged/);
    assert.match(text, /\/reference/);
    assert.match(text, /value_differs/);
    assert.match(text, /"APPT-1"/);
    assert.match(text, /"REAL-9"/);
    assert.equal(await page.locator("#verifications tbody tr").count(), 1);
    await shoot("tool-verification", "Tool front desk");
    // The real tool got the example's input, once.
    assert.deepEqual(calls, [["/book", { day: "2026-01-02" }]]);
  } finally {
    service.close();
  }
});

test("the page has an icon, also where browsers look for it unasked", async () => {
  for (const path of ["/ui/favicon.svg", "/favicon.ico"]) {
    const response = await fetch(base + path);
    assert.equal(response.status, 200, path);
    assert.equal(response.headers.get("content-type"), "image/svg+xml", path);
    assert.match(await response.text(), /^<svg /, path);
  }
  assert.equal(await page.locator('link[rel="icon"]').getAttribute("href"), "/ui/favicon.svg");
});

test("no page threw", () => {
  assert.deepEqual(pageErrors, []);
});

test("every page was photographed", () => {
  assert.deepEqual(taken.sort(), [
    "attempt-domain-error", "attempt-failed", "attempt-harness-error", "attempt-model", "coverage", "operation-conflict",
    "operation-current", "operation-diagnostics", "operation-saved", "operation-stale", "sign-in", "simulation",
    "simulation-fixtures", "simulation-running", "simulations", "simulations-empty", "tool", "tool-verification", "tools",
    "tools-empty",
  ]);
});
