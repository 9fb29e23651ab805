// SurveyClient on a relayed survey, against a fake aggregator and relay (an injected fetch): the
// encryption key is taken only when the pinned key signed it, every report is sealed (per question
// or per submission) and posted to the relay's sealed route only, at one size whatever the answers.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  InvalidSurvey,
  MemoryStorage,
  PolicyViolation,
  SignatureError,
  SurveyClient,
  TransportError,
  b64encode,
  canonicalBytes,
  keyId,
  loadMechanisms,
  parseDefinition,
} from "../deniable.js";
import { parseRelay, parseUrl } from "../sealed.js";
import * as sealing from "../sealing.js";
import { ANSWERS, OTHER } from "./answers.js";

const read = (name) =>
  JSON.parse(readFileSync(new URL(`../../../shared/vectors/${name}`, import.meta.url), "utf8"));
const VECTORS = read("protocol-vectors.json");
const DEMO = VECTORS.surveys.find((s) => s.name === "demo");
const OWN = read("sealing-vectors.json").deniable;
const hex = (text) => Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));
const PRIVATE = hex(OWN.recipient_private_key),
  PUBLIC = hex(OWN.recipient_public_key);
const RELAY = "https://relay.example";

const signer = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
const signingRaw = new Uint8Array(await crypto.subtle.exportKey("raw", signer.publicKey));
const sign = async (bytes) =>
  b64encode(new Uint8Array(await crypto.subtle.sign("Ed25519", signer.privateKey, bytes)));

async function encryptionMember(publicKey = PUBLIC, signingKey = signingRaw) {
  const text = b64encode(publicKey);
  const message = new TextEncoder().encode(
    `deniable-encryption-key/1\nsigning_key:${b64encode(signingKey)}\nsuite:${sealing.SUITE}\npublic_key:${text}\n`,
  );
  return {
    algorithm: "X25519",
    suite: sealing.SUITE,
    public_key: text,
    key_id: await keyId(publicKey),
    signature: await sign(message),
  };
}

async function world({ unit = "question", member } = {}) {
  const definition = {
    ...DEMO.definition,
    relay: { url: RELAY, min_batch: 10, shuffle_unit: unit },
  };
  const survey = {
    status: "open",
    definition,
    signature: await sign(canonicalBytes(definition)),
    key_id: await keyId(signingRaw),
  };
  const key = {
    algorithm: "Ed25519",
    public_key: b64encode(signingRaw),
    key_id: await keyId(signingRaw),
    sequence: 0,
    chain: [],
    encryption_key: member ?? (await encryptionMember()),
  };
  const calls = [],
    state = { statuses: [] };
  const fetch = async (url, init) => {
    calls.push({ url, ...init });
    if (state.keyDown && url.endsWith("/api/v1/key")) throw new TypeError("fetch failed"); // unreachable
    if (init.method === "GET")
      return new Response(
        url.endsWith("/api/v1/key")
          ? (state.keyText?.(key) ?? JSON.stringify(key))
          : JSON.stringify(survey),
        { status: 200 },
      );
    const next = state.statuses.shift() ?? 202; // a status, or [status, problem document]
    return typeof next === "number"
      ? new Response("{}", { status: next })
      : new Response(JSON.stringify(next[1]), {
          status: next[0],
          headers: { "Content-Type": "application/problem+json" },
        });
  };
  const client = new SurveyClient("https://agg.example", {
    publicKey: b64encode(signingRaw),
    storage: new MemoryStorage(),
    fetch,
    modules: undefined,
  });
  return { client, calls, state, posts: () => calls.filter((c) => c.method === "POST") };
}

const unb64url = (text) =>
  Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

test("each question is sealed alone and posted to the relay only", async () => {
  const w = await world();
  const survey = await w.client.fetchSurvey("demo-workplace");
  const receipt = await w.client.answer(survey, ANSWERS);
  assert.ok(receipt.delivered);
  assert.deepEqual(
    w.calls.filter((c) => c.url.startsWith("https://agg.example")).map((c) => c.method),
    ["GET", "GET"],
  );
  const [post] = w.posts();
  assert.equal(post.url, `${RELAY}/api/v1/surveys/demo-workplace/sealed`);
  assert.ok(!("X-Deniable-Enrolment" in post.headers));
  const body = JSON.parse(post.body);
  assert.deepEqual(Object.keys(body), ["format", "key_id", "units"]);
  assert.equal(body.key_id, await keyId(PUBLIC));
  assert.deepEqual(
    body.units.map((u) => u.unit),
    survey.questions.map((q) => q.id),
  );
  for (const { unit, sealed } of body.units) {
    const opened = JSON.parse(
      new TextDecoder().decode(
        await sealing.openSealed(PRIVATE, PUBLIC, {
          surveyId: survey.id,
          unit,
          sealed: unb64url(sealed),
          size: sealing.unitSize(survey, unit),
        }),
      ),
    );
    assert.equal(opened.question, unit);
    assert.ok(receipt.reportIds.includes(opened.id));
  }
});

test("a submission is sealed whole, and the body's size does not depend on the answers", async () => {
  const sizes = new Set();
  for (const answers of [ANSWERS, OTHER]) {
    const w = await world({ unit: "submission" });
    const survey = await w.client.fetchSurvey("demo-workplace");
    await w.client.answer(survey, answers);
    const [post] = w.posts(),
      body = JSON.parse(post.body);
    assert.deepEqual(
      body.units.map((u) => u.unit),
      [""],
    );
    const opened = JSON.parse(
      new TextDecoder().decode(
        await sealing.openSealed(PRIVATE, PUBLIC, {
          surveyId: survey.id,
          unit: "",
          sealed: unb64url(body.units[0].sealed),
        }),
      ),
    );
    assert.equal(opened.reports.length, Object.keys(ANSWERS).length);
    sizes.add(JSON.stringify([post.url, post.headers, post.body.length]));
  }
  assert.equal(sizes.size, 1);
});

test("the enrolment token reaches the relay only, in the body; the sealed units are kept", async () => {
  const w = await world();
  const survey = await w.client.fetchSurvey("demo-workplace");
  w.state.statuses = [401];
  await assert.rejects(w.client.answer(survey, ANSWERS), TransportError);
  const result = await w.client.flush({ enrolmentToken: "tok-9", survey: "demo-workplace" });
  assert.equal(result.delivered, 1);
  const [first, second] = w.posts().map((p) => JSON.parse(p.body));
  assert.equal(first.enrolment_token, undefined);
  assert.equal(second.enrolment_token, "tok-9");
  assert.deepEqual(second.units, first.units);
  assert.ok(
    w.calls.every(
      (c) => !c.url.startsWith("https://agg.example") || !JSON.stringify(c).includes("tok-9"),
    ),
  );
});

test("an encryption key the pinned key did not sign is refused before anything is sent", async () => {
  const other = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign"]);
  const forged = {
    ...(await encryptionMember(new Uint8Array(32).fill(7))),
    signature: b64encode(
      new Uint8Array(await crypto.subtle.sign("Ed25519", other.privateKey, new Uint8Array(1))),
    ),
  };
  const w = await world({ member: forged });
  await assert.rejects(
    w.client.fetchSurvey("demo-workplace"),
    (e) => e instanceof SignatureError && /not signed/.test(e.message),
  );
  assert.equal(w.posts().length, 0);
});

test("a key document with a member twice is refused, as keychain.js and the Python client refuse it", async () => {
  // The genuine signed encryption key last (JSON.parse keeps the last, so it would verify), another before it.
  const forged = await encryptionMember(new Uint8Array(32).fill(7));
  const doubled = (key) =>
    JSON.stringify(key).replace(
      '"encryption_key":',
      `"encryption_key":${JSON.stringify(forged)},"encryption_key":`,
    );
  const w = await world();
  w.state.keyText = doubled;
  await assert.rejects(
    w.client.fetchSurvey("demo-workplace"),
    (e) => e instanceof SignatureError && e.reason === "duplicate-member",
  );
  assert.equal(w.posts().length, 0);
  // A stale-key refusal (409) whose key document has a member twice: not resealed, the refusal stands.
  const v = await world();
  const survey = await v.client.fetchSurvey("demo-workplace");
  v.state.keyText = doubled;
  v.state.statuses = [409];
  await assert.rejects(
    v.client.answer(survey, ANSWERS),
    (e) => e instanceof TransportError && e.status === 409,
  );
  assert.equal(v.posts().length, 1);
});

test("a page that did not pin sealed.js and sealing.js cannot answer a relayed survey", async () => {
  const w = await world();
  const core = [
    "deniable.js",
    "signatures.js",
    "survey.js",
    "jcs.js",
    "randomness.js",
    "mechanism.js",
    "binary_rr.js",
    "grr.js",
    "option_sampling.js",
    "duchi.js",
    "wire.js",
  ];
  for (const [pinned, missing] of [
    [core, "sealed"],
    [[...core, "sealed.js"], "sealing"],
    [[...core, "sealing.js"], "sealed"],
  ]) {
    w.client.modules = pinned;
    await assert.rejects(
      w.client.fetchSurvey("demo-workplace"),
      (e) =>
        e instanceof PolicyViolation && e.message === `${missing}.js is not pinned by this page`,
    );
  }
  assert.equal(w.posts().length, 0);
});

test("after a rotation A → B the device follows the chain and takes the encryption key B signed", async () => {
  const newKey = async () => {
    const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
    return { pair, raw: new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey)) };
  };
  const signWith = async (key, bytes) =>
    b64encode(new Uint8Array(await crypto.subtle.sign("Ed25519", key.pair.privateKey, bytes)));
  const [A, B] = [await newKey(), await newKey()];
  const m = new TextEncoder().encode(
    `deniable-key-rotation/1\nsequence:1\nprevious:${b64encode(A.raw)}\nnext:${b64encode(B.raw)}\n`,
  );
  const link = {
    sequence: 1,
    previous_key_id: await keyId(A.raw),
    previous_public_key: b64encode(A.raw),
    key_id: await keyId(B.raw),
    public_key: b64encode(B.raw),
    signature: await signWith(A, m),
    endorsement: await signWith(B, m),
  };
  const encryptionText = b64encode(PUBLIC);
  const e = new TextEncoder().encode(
    `deniable-encryption-key/1\nsigning_key:${b64encode(B.raw)}\nsuite:${sealing.SUITE}\npublic_key:${encryptionText}\n`,
  );
  const member = {
    algorithm: "X25519",
    suite: sealing.SUITE,
    public_key: encryptionText,
    key_id: await keyId(PUBLIC),
    signature: await signWith(B, e),
  };
  const definition = {
    ...DEMO.definition,
    relay: { url: RELAY, min_batch: 10, shuffle_unit: "question" },
  };
  const survey = {
    status: "open",
    definition,
    signature: await signWith(B, canonicalBytes(definition)),
    key_id: await keyId(B.raw),
  };
  const key = {
    algorithm: "Ed25519",
    public_key: b64encode(B.raw),
    key_id: await keyId(B.raw),
    sequence: 1,
    chain: [link],
    encryption_key: member,
  };
  const posts = [];
  const fetch = async (url, init) => {
    if (init.method === "POST") {
      posts.push(url);
      return new Response("{}", { status: 202 });
    }
    return new Response(JSON.stringify(url.endsWith("/api/v1/key") ? key : survey), {
      status: 200,
    });
  };
  const storage = new MemoryStorage();
  const client = new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage,
    fetch,
  });
  const verified = await client.fetchSurvey("demo-workplace");
  assert.deepEqual(verified.encryption.key, PUBLIC);
  assert.equal(
    JSON.parse(storage.getItem("deniable.state/1")).keys["https://agg.example"].key,
    b64encode(B.raw),
  );
  assert.ok((await client.answer(verified, ANSWERS)).delivered);
  assert.deepEqual(posts, [`${RELAY}/api/v1/surveys/demo-workplace/sealed`]);
  // Signed by the retired key A instead: refused, though A is the key this device first pinned.
  const stale = { ...member, signature: await signWith(A, e) };
  const client2 = new SurveyClient("https://agg.example", {
    publicKey: b64encode(A.raw),
    storage: new MemoryStorage(),
    fetch: async (url, init) =>
      url.endsWith("/api/v1/key")
        ? new Response(JSON.stringify({ ...key, encryption_key: stale }))
        : fetch(url, init),
  });
  await assert.rejects(client2.fetchSurvey("demo-workplace"), SignatureError);
});

test("a stale key refusal (409) reseals the same reports to the verified key and retries once", async () => {
  const w = await world();
  const survey = await w.client.fetchSurvey("demo-workplace");
  w.state.statuses = [409];
  const receipt = await w.client.answer(survey, ANSWERS);
  assert.ok(receipt.delivered);
  const [first, second] = w.posts();
  assert.equal(first.url, second.url);
  assert.equal(first.body.length, second.body.length);
  assert.notEqual(first.body, second.body); // sealed afresh, around the same reports:
  const open = async (post) =>
    Promise.all(
      JSON.parse(post.body).units.map(async ({ unit, sealed }) =>
        new TextDecoder().decode(
          await sealing.openSealed(PRIVATE, PUBLIC, {
            surveyId: survey.id,
            unit,
            sealed: unb64url(sealed),
            size: sealing.unitSize(survey, unit),
          }),
        ),
      ),
    );
  assert.deepEqual(await open(second), await open(first));
  assert.equal(w.client.budget().spentTotal, survey.totalEpsilon); // charged once
  const other = await world();
  other.state.statuses = [409, 409, 409];
  await assert.rejects(
    other.client.answer(await other.client.fetchSurvey("demo-workplace"), OTHER),
    (e) => e instanceof TransportError && e.status === 409,
  );
  assert.equal(other.posts().length, 2); // one retry only; then refused as before
  assert.equal(other.client.load().outbox.length, 0);
});

test("a stale key refusal while the aggregator is unreachable keeps the batch for later", async () => {
  const w = await world();
  const survey = await w.client.fetchSurvey("demo-workplace");
  w.state.statuses = [409];
  w.state.keyDown = true;
  const receipt = await w.client.answer(survey, ANSWERS);
  assert.equal(receipt.delivered, false);
  assert.equal(w.client.load().outbox.length, 1); // kept, not refused
  w.state.keyDown = false;
  w.state.statuses = [409];
  assert.equal((await w.client.flush()).delivered, 1); // refused again, resealed, taken
  const [first, second, third] = w.posts();
  assert.equal(first.body, second.body);
  assert.notEqual(second.body, third.body);
  assert.equal(w.client.load().outbox.length, 0);
});

test("a relay's 409 survey-closed is final: no key fetched, no reseal", async () => {
  const w = await world();
  const survey = await w.client.fetchSurvey("demo-workplace");
  const gets = w.calls.filter((c) => c.method === "GET").length;
  w.state.statuses = [
    [409, { type: "urn:deniable:problem:survey-closed", title: "Survey closed", status: 409 }],
  ];
  await assert.rejects(
    w.client.answer(survey, ANSWERS),
    (e) => e instanceof TransportError && e.status === 409,
  );
  assert.equal(w.posts().length, 1);
  assert.equal(w.calls.filter((c) => c.method === "GET").length, gets);
  assert.equal(w.client.load().outbox.length, 0);
});

test("relay URLs: accepted and serialized as the Python side does (the relay_urls vectors)", () => {
  assert.ok(
    VECTORS.relay_urls.some((v) => v.origin?.includes("[")),
    "the vectors hold IPv6 relays",
  );
  for (const { url, origin } of VECTORS.relay_urls) {
    const member = { url, min_batch: 5, shuffle_unit: "question" };
    if (origin === null) {
      assert.throws(
        () => parseRelay(member),
        (error) => error.reason === "relay",
        url,
      );
    } else {
      const relay = parseRelay(member);
      assert.equal(relay.url, url);
      assert.equal(relay.origin, origin, url);
      assert.equal(parseUrl(url).origin, origin, url);
    }
  }
});

test("a resend the relay answers 409 already-delivered is delivered: no reseal, no refusal", async () => {
  // The relay held the batch but its answer was lost (a 503 here); meanwhile it forwarded the
  // units and forgot which token admitted them (docs/relay.md): the resend's answer is a delivery.
  const w = await world();
  const survey = await w.client.fetchSurvey("demo-workplace");
  w.state.statuses = [
    503,
    [
      409,
      { type: "urn:deniable:problem:already-delivered", title: "Already delivered", status: 409 },
    ],
  ];
  const receipt = await w.client.answer(survey, ANSWERS, { enrolmentToken: "token-1" });
  assert.equal(receipt.delivered, false);
  const gets = w.calls.filter((c) => c.method === "GET").length;
  assert.deepEqual(await w.client.flush(), {
    delivered: 1,
    surveys: ["demo-workplace"],
    pending: 0,
  });
  assert.equal(w.client.load().outbox.length, 0);
  assert.equal(w.calls.filter((c) => c.method === "GET").length, gets); // no key fetched: not a stale key
  const [first, second] = w.posts();
  assert.equal(first.body, second.body);
  // Any other 409 from the relay is still a stale key (resealed once) or a refusal.
  const v = await world();
  v.state.statuses = [
    [409, { type: "urn:deniable:problem:conflict", status: 409 }],
    [409, { type: "urn:deniable:problem:conflict", status: 409 }],
  ];
  await assert.rejects(
    v.client.answer(await v.client.fetchSurvey("demo-workplace"), ANSWERS),
    (e) => e instanceof TransportError && e.status === 409,
  );
  assert.equal(v.posts().length, 2);
});

// -- relay noise (protocol §11.7; shared/vectors/sealing-vectors.json relay_noise) ---------------

const NOISE = read("sealing-vectors.json").relay_noise;

test("a survey whose relay adds noise parses, with the signed noise", async () => {
  await loadMechanisms(NOISE.survey);
  const survey = parseDefinition(NOISE.survey);
  const { epsilon, delta, law } = NOISE.survey.relay.noise;
  assert.equal(survey.relay.noise.epsilon, epsilon);
  assert.equal(survey.relay.noise.delta, delta);
  assert.deepEqual(survey.relay.noise.law, {
    distribution: law.distribution,
    shift: law.shift,
    top: law.top,
    lowerRatio: law.lower_ratio,
    upperRatio: law.upper_ratio,
  });
  assert.equal(new TextDecoder().decode(canonicalBytes(NOISE.survey)), NOISE.canonical);
  const binomial = { epsilon: 1, delta: 1e-6, law: { distribution: "binomial", trials: 148 } };
  assert.deepEqual(parseRelay({ ...NOISE.survey.relay, noise: binomial }).noise.law, binomial.law);
  assert.equal(parseRelay({ url: RELAY, min_batch: 2, shuffle_unit: "question" }).noise, null);
});

test("relay noise the protocol refuses is refused", async () => {
  await loadMechanisms(NOISE.survey);
  const relay = NOISE.survey.relay;
  for (const { why, noise } of NOISE.refused)
    assert.throws(() => parseRelay({ ...relay, noise }), InvalidSurvey, why);
  const law = relay.noise.law;
  for (const bad of [
    { ...relay.noise, delta: 0 },
    { ...relay.noise, epsilon: true },
    { ...relay.noise, extra: 1 },
    { ...relay.noise, law: { ...law, lower_ratio: "2/4" } },
    { ...relay.noise, law: { ...law, upper_ratio: "0.6" } },
    { ...relay.noise, law: { ...law, top: 1.5 } },
    { ...relay.noise, law: { distribution: "binomial", trials: 0 } },
    { ...relay.noise, law: { distribution: "binomial", trials: 3, shift: 1 } },
  ])
    assert.throws(() => parseRelay({ ...relay, noise: bad }), InvalidSurvey);
  assert.throws(
    () => parseRelay({ ...relay, shuffle_unit: "submission" }),
    /shuffle_unit 'question'/,
  );
  const hashed = {
    ...NOISE.survey,
    questions: [VECTORS.questions.olh],
  };
  await loadMechanisms(hashed);
  assert.throws(() => parseDefinition(hashed), /one value of a small set/);
});

test("relay noise covers optional, conditional and scale questions", async () => {
  const { survey } = NOISE.extended;
  await loadMechanisms(survey);
  const parsed = parseDefinition(survey);
  assert.deepEqual(
    parsed.questions.map((x) => x.id),
    Object.keys(NOISE.extended.output_reports),
  );
  assert.ok(parsed.relay.noise);
});
