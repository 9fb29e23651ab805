// SurveyClient against a fake aggregator (an injected fetch) and MemoryStorage: key pinning,
// signature and policy refusals with nothing posted, the ledger and "answered" mark written
// before sending, retries with the identical body, and requests independent of the answers.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  AlreadyAnswered,
  BudgetExceeded,
  MemoryStorage,
  PolicyViolation,
  SignatureError,
  SurveyClient,
  TransportError,
  b64decode,
} from "../deniable.js";
import { Question } from "../survey.js";
import { ANSWERS, OTHER } from "./answers.js";

const VECTORS = JSON.parse(
  readFileSync(new URL("../../../shared/vectors/protocol-vectors.json", import.meta.url), "utf8"),
);
const DEMO = VECTORS.surveys.find((s) => s.name === "demo");
const KEY = VECTORS.public_key;

function aggregator({
  document = { status: "open", definition: DEMO.definition, signature: DEMO.signature },
  down = false,
} = {}) {
  const calls = [];
  const state = { down, status: 201 };
  const fetch = async (url, init) => {
    calls.push({ url, ...init });
    if (state.down) throw new TypeError("Failed to fetch");
    if (init.method === "GET") return new Response(JSON.stringify(document), { status: 200 });
    return new Response("{}", { status: state.status });
  };
  return { fetch, calls, state, posts: () => calls.filter((c) => c.method === "POST") };
}

/** The same 64 bytes with a base64 padding bit set (decoders that do not check accept it). */
function noncanonical(signature) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    i = alphabet.indexOf(signature.at(-3));
  assert.ok(signature.endsWith("==") && i % 16 === 0);
  const text = signature.slice(0, -3) + alphabet[i + 1] + "==";
  assert.equal(atob(text), atob(signature));
  return text;
}

const client = (agg, options = {}) =>
  new SurveyClient("https://agg.example", {
    publicKey: KEY,
    storage: new MemoryStorage(),
    fetch: agg.fetch,
    ...options,
  });

test("a verified survey is answered once; the ledger is charged and the batch sent", async () => {
  const agg = aggregator();
  const c = client(agg);
  const survey = await c.fetchSurvey("demo-workplace");
  assert.equal(survey.questions.length, DEMO.definition.questions.length);
  const receipt = await c.answer(survey, ANSWERS);
  assert.ok(receipt.delivered);
  assert.equal(agg.posts().length, 1);
  const body = JSON.parse(agg.posts()[0].body);
  assert.deepEqual(
    body.reports.map((r) => r.id),
    receipt.reportIds,
  );
  assert.ok(Math.abs(c.budget().spentTotal - survey.totalEpsilon) < 1e-12);
  await assert.rejects(c.fetchSurvey("demo-workplace"), AlreadyAnswered);
});

test("'already answered' follows the aggregator's key, not the spelling of its URL", async () => {
  const storage = new MemoryStorage(),
    agg = aggregator();
  const first = new SurveyClient("https://agg.example", {
    publicKey: KEY,
    storage,
    fetch: agg.fetch,
  });
  assert.ok((await first.answer(await first.fetchSurvey("demo-workplace"), ANSWERS)).delivered);
  const second = new SurveyClient("https://AGG.example/", {
    publicKey: KEY,
    storage,
    fetch: agg.fetch,
  });
  await assert.rejects(second.fetchSurvey("demo-workplace"), AlreadyAnswered);
  assert.equal(agg.posts().length, 1);
});

test("the request's size, shape and headers do not depend on the answers", async () => {
  const shapes = [];
  for (const answers of [ANSWERS, OTHER, ANSWERS]) {
    const agg = aggregator();
    const c = client(agg);
    await c.answer(await c.fetchSurvey("demo-workplace"), answers);
    const post = agg.posts()[0];
    const body = JSON.parse(post.body);
    shapes.push(
      JSON.stringify([
        post.url,
        post.headers,
        post.body.length,
        body.reports.map((r) => [Object.keys(r), r.payload.length]),
      ]),
    );
  }
  assert.equal(new Set(shapes).size, 1);
});

test("randomization never touches Math.random", async () => {
  const agg = aggregator();
  const c = client(agg);
  const survey = await c.fetchSurvey("demo-workplace");
  const original = Math.random;
  Math.random = () => {
    throw new Error("Math.random was called");
  };
  try {
    await c.answer(survey, ANSWERS);
  } finally {
    Math.random = original;
  }
});

test("a wrong key, a tampered definition or signature is refused and nothing is posted", async () => {
  const wrongKey = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
  const tampered = structuredClone(DEMO.definition);
  tampered.questions[0].text = "Did you steal?";
  const cases = [
    [aggregator(), { publicKey: wrongKey }],
    [
      aggregator({ document: { status: "open", definition: tampered, signature: DEMO.signature } }),
      {},
    ],
    [
      aggregator({
        document: {
          status: "open",
          definition: DEMO.definition,
          signature: "AAAA" + DEMO.signature.slice(4),
        },
      }),
      {},
    ],
    [
      aggregator({
        document: {
          status: "open",
          definition: DEMO.definition,
          signature: noncanonical(DEMO.signature),
        },
      }),
      {},
    ],
  ];
  for (const [agg, options] of cases) {
    await assert.rejects(client(agg, options).fetchSurvey("demo-workplace"), SignatureError);
    assert.equal(agg.posts().length, 0);
  }
  assert.throws(
    () => new SurveyClient("https://agg.example", { storage: new MemoryStorage() }),
    SignatureError,
  );
});

test("a survey naming a module the page did not pin is refused before it is imported", async () => {
  const core = ["randomness.js", "jcs.js", "survey.js", "signatures.js", "deniable.js"];
  const pinned = [...core, "mechanism.js", "grr.js"];
  const agg = aggregator();
  await assert.rejects(
    client(agg, { modules: pinned }).fetchSurvey("demo-workplace"),
    (e) => e instanceof PolicyViolation && /option_sampling\.js is not pinned/.test(e.message),
  );
  assert.equal(agg.posts().length, 0);
  const survey = await client(aggregator(), {
    modules: [...pinned, "option_sampling.js", "duchi.js"],
  }).fetchSurvey("demo-workplace");
  assert.equal(survey.questions.length, DEMO.definition.questions.length);
  // A module's static imports count too: longitudinal.js without grr.js is refused.
  const definition = {
    format: "deniable.survey/2",
    id: "weekly",
    title: "Weekly",
    questions: [VECTORS.questions.habit],
  };
  const weekly = client(aggregator({ document: await signedDocument(definition) }), {
    modules: [...core, "mechanism.js", "longitudinal.js"],
  });
  await assert.rejects(
    weekly.fetchSurvey("weekly"),
    (e) => e instanceof PolicyViolation && /grr\.js is not pinned/.test(e.message),
  );
});

test("policy caps and the budget are enforced before anything is randomized", async () => {
  const agg = aggregator();
  await assert.rejects(
    client(agg, { policy: { maxQuestionEpsilon: 2 } }).fetchSurvey("demo-workplace"),
    PolicyViolation,
  );
  await assert.rejects(
    client(agg, { policy: { maxSurveyEpsilon: 5 } }).fetchSurvey("demo-workplace"),
    PolicyViolation,
  );
  await assert.rejects(
    client(agg, { policy: { allowedMechanisms: ["grr"] } }).fetchSurvey("demo-workplace"),
    PolicyViolation,
  );
  await assert.rejects(
    client(agg, { policy: { periodEpsilon: 7 } }).fetchSurvey("demo-workplace"),
    BudgetExceeded,
  );
  assert.equal(agg.posts().length, 0);
});

test("offline: the batch waits in the outbox and is resent identically (same report ids)", async () => {
  const agg = aggregator();
  const storage = new MemoryStorage();
  const c = client(agg, { storage });
  const survey = await c.fetchSurvey("demo-workplace");
  agg.state.down = true;
  const receipt = await c.answer(survey, ANSWERS);
  assert.equal(receipt.delivered, false);
  assert.equal((await c.flush()).pending, 1);
  agg.state.down = false;
  agg.state.status = 503;
  assert.equal((await c.flush()).pending, 1);
  agg.state.status = 201;
  assert.deepEqual(await c.flush(), { delivered: 1, surveys: ["demo-workplace"], pending: 0 });
  assert.deepEqual(await c.flush(), { delivered: 0, surveys: [], pending: 0 });
  const bodies = new Set(agg.posts().map((p) => p.body));
  assert.equal(bodies.size, 1);
  assert.deepEqual(
    JSON.parse([...bodies][0]).reports.map((r) => r.id),
    receipt.reportIds,
  );
});

test("429/503 keep the batch and report the Retry-After asked for (seconds or an HTTP date)", async () => {
  const now = Date.parse("2026-11-26T12:00:00Z"),
    answers = [];
  for (const [status, header, expected] of [
    [503, "7", 7],
    [429, "Thu, 26 Nov 2026 12:01:30 GMT", 90],
    [503, null, undefined],
    [429, "soon", undefined],
  ]) {
    const agg = aggregator();
    agg.fetch = async (url, init) => {
      agg.calls.push({ url, ...init });
      if (init.method === "GET")
        return new Response(
          JSON.stringify({
            status: "open",
            definition: DEMO.definition,
            signature: DEMO.signature,
          }),
          { status: 200 },
        );
      return new Response("{}", {
        status,
        headers: header === null ? {} : { "Retry-After": header },
      });
    };
    const c = client(agg, { clock: () => now });
    const receipt = await c.answer(await c.fetchSurvey("demo-workplace"), ANSWERS);
    assert.equal(receipt.delivered, false);
    assert.equal(receipt.retryAfter, expected);
    assert.deepEqual(await c.flush(), {
      delivered: 0,
      surveys: [],
      pending: 1,
      ...(expected !== undefined && { retryAfter: expected }),
    });
    assert.equal(new Set(agg.posts().map((p) => p.body)).size, 1);
    answers.push(agg.posts().length);
  }
  assert.deepEqual(answers, [2, 2, 2, 2]);
});

test("flushes run one after another: a batch is never posted twice at once", async () => {
  const agg = aggregator();
  const c = client(agg);
  const survey = await c.fetchSurvey("demo-workplace");
  agg.state.down = true;
  await c.answer(survey, ANSWERS);
  agg.state.down = false;
  let inFlight = 0,
    most = 0;
  const fetch = agg.fetch;
  c.fetch = async (url, init) => {
    most = Math.max(most, ++inFlight);
    await new Promise((resolve) => setTimeout(resolve, 20));
    inFlight--;
    return fetch(url, init);
  };
  const results = await Promise.all([c.flush(), c.flush(), c.flush()]);
  assert.deepEqual(
    results.map((r) => r.delivered),
    [1, 0, 0],
  );
  assert.equal(most, 1);
  assert.equal(agg.posts().filter((p) => p.method === "POST").length, 2); // one while down, one now
});

test("a refusal (4xx) drops the batch and raises", async () => {
  const agg = aggregator();
  const c = client(agg);
  const survey = await c.fetchSurvey("demo-workplace");
  agg.state.status = 409;
  await assert.rejects(c.answer(survey, ANSWERS), TransportError);
  assert.deepEqual(await c.flush(), { delivered: 0, surveys: [], pending: 0 });
});

test("a refused enrolment token (401, 403) keeps the batch until another token is given", async () => {
  for (const status of [401, 403]) {
    const agg = aggregator();
    const c = client(agg);
    const survey = await c.fetchSurvey("demo-workplace");
    agg.state.status = status;
    const error = await c
      .answer(survey, ANSWERS, { enrolmentToken: "dne_" + "a".repeat(43) })
      .catch((e) => e);
    assert.ok(error instanceof TransportError && error.status === status);
    assert.deepEqual(await c.flush(), { delivered: 0, surveys: [], pending: 0, waiting: 1 }); // not resent without a token
    assert.equal(agg.posts().length, 1);
    assert.ok(c.budget().spentTotal > 0); // charged and marked answered: never silently lost
    agg.state.status = 201;
    const token = "dne_" + "b".repeat(43);
    assert.deepEqual(await c.flush({ enrolmentToken: token, survey: "demo-workplace" }), {
      delivered: 1,
      surveys: ["demo-workplace"],
      pending: 0,
    });
    const posts = agg.posts();
    assert.equal(posts.length, 2);
    assert.equal(posts[1].body, posts[0].body); // the same reports, ids included
    assert.equal(posts[1].headers["X-Deniable-Enrolment"], token);
  }
});

test("an earlier batch's refusal does not fail a later answer", async () => {
  const storage = new MemoryStorage(),
    agg = aggregator();
  const first = client(agg, { storage });
  const survey = await first.fetchSurvey("demo-workplace");
  agg.state.down = true;
  await first.answer(survey, ANSWERS); // queued
  const definition = { ...DEMO.definition, id: "demo-2" };
  const other = aggregator({ document: await signedDocument(definition) });
  const statuses = [400, 201]; // the queued batch is refused, the new one stored
  other.fetch = async (url, init) => {
    other.calls.push({ url, ...init });
    if (init.method === "GET")
      return new Response(JSON.stringify(await signedDocument(definition)), { status: 200 });
    return new Response("{}", { status: statuses.shift() });
  };
  const second = client(other, { storage });
  const receipt = await second.answer(await second.fetchSurvey("demo-2"), ANSWERS);
  assert.ok(receipt.delivered);
  assert.equal(other.posts().length, 2);
  assert.equal(second.load().outbox.length, 0);
});

test("a retry token is for one survey's batch: flush refuses it without the survey", async () => {
  const agg = aggregator();
  const c = client(agg);
  await assert.rejects(c.flush({ enrolmentToken: "dne_" + "c".repeat(43) }), TypeError);
});

test("a request the aggregator never answers times out; later batches are not held back", async () => {
  const agg = aggregator();
  const c = client(agg, { timeout: 200 });
  const survey = await c.fetchSurvey("demo-workplace");
  const fetch = agg.fetch;
  c.fetch = (url, init) =>
    init.method === "POST"
      ? new Promise((_, reject) =>
          init.signal.addEventListener("abort", () => reject(init.signal.reason)),
        )
      : fetch(url, init);
  const alive = setTimeout(() => {}, 5000); // Node's AbortSignal.timeout timer does not keep it running
  const started = Date.now(),
    receipt = await c.answer(survey, ANSWERS);
  clearTimeout(alive);
  assert.ok(!receipt.delivered && receipt.pendingBatches === 1 && Date.now() - started < 5000);
});

test("confirm sees only noisy values and can cancel without charging", async () => {
  const agg = aggregator();
  const c = client(agg);
  const survey = await c.fetchSurvey("demo-workplace");
  let shown;
  const receipt = await c.answer(survey, ANSWERS, {
    confirm: (reports) => {
      shown = reports;
      return false;
    },
  });
  assert.ok(receipt.cancelled);
  assert.equal(agg.posts().length, 0);
  assert.equal(c.budget().spentTotal, 0);
  assert.deepEqual(
    shown.map((r) => r.question),
    DEMO.definition.questions.map((q) => q.id),
  );
  assert.ok(shown.every((r) => typeof r.description === "string" && /^[0-9a-f]+$/.test(r.payload)));
});

test("cancelling and asking again with the same answers shows and sends the same noise", async () => {
  const agg = aggregator();
  const c = client(agg);
  const survey = await c.fetchSurvey("demo-workplace");
  const shown = [];
  const look = (reports) => {
    shown.push(reports.map((r) => r.payload));
    return false;
  };
  for (let i = 0; i < 20; i++) await c.answer(survey, ANSWERS, { confirm: look });
  assert.equal(new Set(shown.map((p) => p.join())).size, 1, "no re-randomizing by cancelling");
  await c.answer(survey, { ...ANSWERS, overtime: 12 }, { confirm: look }); // one answer changed
  assert.deepEqual(shown.at(-1).slice(0, 3), shown[0].slice(0, 3));
  const receipt = await c.answer(survey, ANSWERS, { confirm: () => true });
  assert.ok(receipt.delivered);
  assert.deepEqual(
    JSON.parse(agg.posts()[0].body).reports.map((r) => r.payload),
    shown[0],
  );
  // Another fetch of the survey (perhaps re-signed with another ε) draws afresh.
  const fresh = new Set();
  for (let i = 0; i < 20; i++)
    await c.answer(
      await client(aggregator(), { storage: new MemoryStorage() }).fetchSurvey("demo-workplace"),
      ANSWERS,
      {
        confirm: (r) => {
          fresh.add(r.map((x) => x.payload).join());
          return false;
        },
      },
    );
  assert.ok(fresh.size > 1);
  // The cache is in memory: no true answer is ever stored on the device.
  assert.ok(!JSON.stringify(c.load()).includes(ANSWERS.commute));
});

test("the enrolment header is sent with every retry of the batch", async () => {
  const agg = aggregator();
  const c = client(agg);
  const survey = await c.fetchSurvey("demo-workplace");
  agg.state.down = true;
  await c.answer(survey, ANSWERS, { enrolmentToken: "dne_" + "a".repeat(43) });
  agg.state.down = false;
  await c.flush();
  const posts = agg.posts();
  assert.ok(
    posts.length >= 2 &&
      posts.every((p) => p.headers["X-Deniable-Enrolment"] === "dne_" + "a".repeat(43)),
  );
});

// A survey signed in the test with the vectors' key (its seed is public: test data only).
async function signedDocument(definition) {
  const seed = new Uint8Array(
    await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode("deniable protocol vectors signing key"),
    ),
  );
  const b64url = (bytes) =>
    btoa(String.fromCharCode(...bytes))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
  const x = Uint8Array.from(atob(KEY), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey(
    "jwk",
    { kty: "OKP", crv: "Ed25519", d: b64url(seed), x: b64url(x) },
    { name: "Ed25519" },
    false,
    ["sign"],
  );
  const { canonicalBytes } = await import("../jcs.js");
  const signature = new Uint8Array(
    await crypto.subtle.sign({ name: "Ed25519" }, key, canonicalBytes(definition)),
  );
  return { status: "open", definition, signature: btoa(String.fromCharCode(...signature)) };
}

test("longitudinal questions: charged for the first d answers of a memo family, whatever the answers", async () => {
  const runs = [];
  for (const answers of [
    (n) => ({ habit: true, mood: "Home" }),
    (n) => ({ habit: n % 2 === 0, mood: ["Car", "Bus", "Home"][n % 3] }),
  ]) {
    const storage = new MemoryStorage(),
      charged = [];
    for (let n = 0; n < 7; n++) {
      const id = `weekly-${n}`,
        definition = {
          format: "deniable.survey/2",
          id,
          title: "Weekly",
          questions: [VECTORS.questions.habit, VECTORS.questions.mood],
        };
      const c = client(aggregator({ document: await signedDocument(definition) }), { storage });
      const receipt = await c.answer(await c.fetchSurvey(id), answers(n));
      assert.ok(receipt.delivered);
      charged.push(receipt.epsilonCharged);
    }
    runs.push(charged);
  }
  // habit (yes/no, ε = 2): twice; mood (5 options, ε = 3): five times; then post-processing only.
  assert.deepEqual(runs[0], [5, 5, 3, 3, 3, 0, 0]);
  assert.deepEqual(
    runs[1],
    runs[0],
    "the charges, and so every refusal, do not depend on the answers",
  );
});

test("a memo family binds the signed thresholds: other thresholds at the same key and ε are charged again", async () => {
  const storage = new MemoryStorage(),
    charged = [];
  const habit = VECTORS.questions.habit,
    flipped = {
      ...habit,
      parameters: { ...habit.parameters, keep: 2 ** 53 - habit.parameters.keep },
    };
  for (const [n, question] of [habit, habit, flipped].entries()) {
    const id = `daily-${n}`,
      definition = { format: "deniable.survey/2", id, title: "Daily", questions: [question] };
    const c = client(aggregator({ document: await signedDocument(definition) }), { storage });
    charged.push((await c.answer(await c.fetchSurvey(id), { habit: true })).epsilonCharged);
  }
  assert.deepEqual(charged, [2, 2, 2]); // the flipped thresholds (|ln| = ε, accepted) start a family of their own
  const state = JSON.parse(storage.getItem("deniable.state/1")),
    secret = b64decode(state.secret);
  const [a, b] = await Promise.all(
    [habit, flipped].map((d, i) => new Question(d, i)).map((q) => q.oracle.family(secret, q)),
  );
  assert.notEqual(a, b);
  assert.deepEqual(Object.keys(state.memo).sort(), [a, b].sort());
  assert.deepEqual([state.memo[a].count, state.memo[b].count], [2, 1]);
});

test("no module calls Math.random", async () => {
  const { readdirSync } = await import("node:fs");
  const files = readdirSync(new URL("..", import.meta.url)).filter((f) => f.endsWith(".js"));
  assert.ok(files.length >= 15);
  for (const file of files) {
    const code = readFileSync(new URL(`../${file}`, import.meta.url), "utf8").replace(
      /\/\/.*$/gm,
      "",
    ); // comments may say "never"
    assert.ok(!code.includes("Math.random"), file);
  }
});
