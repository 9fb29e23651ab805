// Optional and conditional questions (docs/protocol.md §5.5, §5.6) in the browser client: the
// shared table of show_if cases (tests/client/condition_cases.json, which Python checks too), the
// refusals of bad conditions, every mechanism's extended domain, and a device whose requests are
// the same (count, sizes, order, headers) on every path through a survey with skip logic.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  ArraySource,
  InvalidSurvey,
  InvalidValue,
  MemoryStorage,
  SurveyClient,
  b64encode,
  canonicalBytes,
  mechanismInputs,
  statuses,
} from "../deniable.js";
import { loadMechanisms, parseDefinition } from "../survey.js";

const TABLE = JSON.parse(
  readFileSync(new URL("../../../tests/client/condition_cases.json", import.meta.url), "utf8"),
);
await loadMechanisms(TABLE.definition);
const SURVEY = parseDefinition(structuredClone(TABLE.definition));
const R = 2 ** 53,
  threshold = (p) => Math.min(Math.max(Math.floor(p * R), 1), R - 1),
  keep = (epsilon, d) => threshold(Math.exp(epsilon) / (Math.exp(epsilon) + d - 1));
/** The 7 bytes from which uniform53() reads `value` (randomness.js: little-endian, low 3 bits unused). */
const draw = (value) => {
  const low = (value % 2 ** 21) * 8,
    high = Math.floor(value / 2 ** 21);
  return [0, 8, 16]
    .map((s) => (low >> s) & 255)
    .concat([0, 8, 16, 24].map((s) => (high >>> s) & 255));
};

test("the shared table: each question's status, and refusals naming the question", () => {
  for (const c of TABLE.cases) {
    if (c.refused) {
      assert.throws(
        () => mechanismInputs(SURVEY, c.answers),
        (error) => error instanceof InvalidValue && error.message.includes(c.refused),
        c.name,
      );
      continue;
    }
    assert.deepEqual(statuses(SURVEY.questions, c.answers), c.statuses, c.name);
    const inputs = mechanismInputs(SURVEY, c.answers);
    SURVEY.questions.forEach((q, i) => {
      const status = c.statuses[i],
        expected =
          status === "answered"
            ? q.checkAnswer(c.answers[q.id])
            : q.extraValue(status === "declined" ? "declined" : "not_applicable");
      assert.deepEqual(inputs[i], expected, `${c.name}: ${q.id}`);
    });
  }
});

/** The table's definition with one question's show_if replaced (or removed: undefined). */
function withCondition(index, condition) {
  const d = structuredClone(TABLE.definition);
  d.questions[index].show_if = condition;
  if (condition === undefined) delete d.questions[index].show_if;
  return d;
}

test("bad conditions are refused with reason condition", () => {
  const leaf = { question: "smoker", equals: true },
    deep = (n) => (n === 1 ? leaf : { all: [deep(n - 1), leaf] });
  const bad = [
    [2, { question: "quit", equals: true }], // itself
    [2, { question: "mood", equals: "Good" }], // a later question
    [2, { question: "nobody", equals: true }],
    [3, { question: "smoker", equals: "yes" }], // not a yes/no value
    [4, { question: "mood", in: [] }],
    [4, { question: "mood", in: ["Good", "Good"] }],
    [4, { question: "mood", in: ["Great"] }],
    [4, { question: "mood", includes: "Good" }], // includes: multiple choice only
    [6, { question: "why", equals: "Work" }],
    [6, { question: "why", includes: "Money" }],
    [6, { question: "nps", equals: 11 }],
    [6, { question: "nps", between: [-1, 5] }],
    [6, { question: "cigarettes", between: [5, 2] }],
    [6, { question: "cigarettes", between: [0, 61] }],
    [6, { question: "cigarettes", equals: 3 }],
    [6, { all: [leaf] }],
    [6, { any: Array(17).fill(leaf) }],
    [6, deep(5)],
    [6, { question: "smoker", equals: true, in: [true] }],
    [6, { question: "smoker" }],
    [6, [leaf]],
  ];
  for (const [index, condition] of bad)
    assert.throws(
      () => parseDefinition(withCondition(index, condition)),
      (error) => error instanceof InvalidSurvey && error.reason === "condition",
      JSON.stringify(condition),
    );
  parseDefinition(withCondition(6, deep(4))); // depth 4 is allowed
  // Far beyond any stack: refused in words, as the Python core refuses it.
  let hostile = leaf;
  for (let i = 0; i < 100000; i++) hostile = { all: [hostile, leaf] };
  assert.throws(
    () => parseDefinition(withCondition(6, hostile)),
    (error) => error instanceof InvalidSurvey && /nested too deeply/.test(error.message),
  );
  parseDefinition(withCondition(6, { question: "nps", in: [0, 1, 2, 3, 4, 5, 6] }));
});

test("other refusals: binary_rr, longitudinal or discrete_laplace with extras; points; help", () => {
  const refuse = (change, reason) => {
    const d = structuredClone(TABLE.definition);
    change(d.questions);
    assert.throws(
      () => parseDefinition(d),
      (error) => error instanceof InvalidSurvey && error.reason === reason,
      `${reason}: ${JSON.stringify(d.questions.slice(0, 2))}`,
    );
  };
  refuse((q) => Object.assign(q[0], { mechanism: "binary_rr" }), "mechanism");
  refuse(
    (q) =>
      Object.assign(q[0], {
        mechanism: "grr",
        longitudinal: { key: "smoking", instantaneous_epsilon: 2 },
      }),
    "mechanism",
  );
  refuse(
    (q) => Object.assign(q[1], { mechanism: "discrete_laplace", parameters: { grid_size: 61 } }),
    "mechanism",
  );
  refuse((q) => Object.assign(q[5], { points: 10 }), "points");
  refuse((q) => Object.assign(q[0], { help: " \u200b" }), "text-blank");
  refuse((q) => Object.assign(q[0], { optional: "yes" }), "wrong-type");
  refuse((q) => Object.assign(q[3], { points: 5 }), "unknown-member");
  refuse((q) => Object.assign(q[5], { anchors: { low: "x" } }), "missing-member");
});

/** A one-question survey of `type` and `mechanism` with both extras, its parameters at ε = 1. */
function extended(type, mechanism) {
  const e = 1,
    base = type === "yes_no" ? 2 : type === "scale" ? 5 : 3,
    d = base + 2;
  const parameters = {
    grr: { keep: keep(e, d) },
    sue: {
      one_if_true: threshold(Math.exp(e / 2) / (Math.exp(e / 2) + 1)),
      one_if_other: threshold(1 / (Math.exp(e / 2) + 1)),
    },
    oue: { one_if_true: threshold(0.5), one_if_other: threshold(1 / (Math.exp(e) + 1)) },
    olh: { hash_range: 3, keep: keep(e, 3) },
    hrr: { keep: keep(e, 2), order: 8 },
    subset: { keep: threshold((2 * Math.exp(e)) / (2 * Math.exp(e) + d - 2)), subset_size: 2 },
    option_sampling: { keep: keep(e, 2) },
    binary_rr: { keep: keep(e / (base + 1), 2), option_epsilon: e / (base + 1) },
  }[mechanism];
  const question = {
    id: "q",
    type,
    text: "Q?",
    epsilon: e,
    mechanism,
    parameters,
    optional: true,
    show_if: { question: "first", equals: true },
    ...(type === "scale" ? { points: 5 } : {}),
    ...(type.endsWith("_choice") ? { options: ["A", "B", "C"] } : {}),
  };
  const first = {
    id: "first",
    type: "yes_no",
    text: "First?",
    epsilon: 1,
    mechanism: "binary_rr",
    parameters: { keep: keep(1, 2) },
  };
  return { format: "deniable.survey/2", id: "x", title: "X", questions: [first, question] };
}

test("every mechanism randomizes declined and not applicable over its extended domain", async () => {
  const forms = [
    ...["grr", "sue", "oue", "olh", "hrr", "subset"].flatMap((m) => [
      ["yes_no", m],
      ["single_choice", m],
      ["scale", m],
    ]),
    ["multiple_choice", "option_sampling"],
    ["multiple_choice", "binary_rr"],
  ];
  for (const [type, mechanism] of forms) {
    const definition = extended(type, mechanism);
    await loadMechanisms(definition);
    const name = `${type} ${mechanism}`,
      q = parseDefinition(definition).questions[1];
    assert.deepEqual(q.extras, ["declined", "not_applicable"], name);
    assert.ok(q.oracle.epsilonImplemented <= 1 + 1e-9, name);
    const answer = { yes_no: true, single_choice: "B", scale: 4, multiple_choice: ["A", "C"] }[
      type
    ];
    const inputs = [
      q.checkAnswer(answer),
      q.extraValue("declined"),
      q.extraValue("not_applicable"),
    ];
    if (type === "multiple_choice") {
      assert.deepEqual(inputs[0], [1, 0, 1, 0, 0], name);
      assert.deepEqual(inputs[1], [0, 0, 0, 1, 0], name);
      assert.deepEqual(inputs[2], [0, 0, 0, 0, 1], name);
      assert.equal(q.oracle.options, 5, name);
    } else {
      const base = type === "yes_no" ? 2 : type === "scale" ? 5 : 3;
      assert.deepEqual(inputs.slice(1), [base, base + 1], name);
      assert.equal(q.oracle.domainSize, base + 2, name);
    }
    // Same payload length on every path, and the truth in reach of every report (ε finite).
    const lengths = new Set();
    for (const input of inputs)
      for (let i = 0; i < 20; i++) lengths.add(q.oracle.encode(q.oracle.randomize(input)).length);
    assert.equal(lengths.size, 1, name);
  }
});

test("GRR keeps a declined or not-applicable value with probability keep, else another", () => {
  const q = SURVEY.questions[0]; // smoker: yes_no, optional: d' = 3
  // Kept below keep; at keep, replaced by one of the others (randbelow(2): 0, then 1).
  const source = (u, other) => new ArraySource(Uint8Array.of(...draw(u), other));
  assert.equal(q.oracle.randomize(q.extraValue("declined"), source(q.oracle.keep - 1, 0)), 2);
  assert.equal(q.oracle.randomize(q.extraValue("declined"), source(q.oracle.keep, 0)), 0);
  assert.equal(q.oracle.randomize(q.extraValue("declined"), source(q.oracle.keep, 1)), 1);
  assert.equal(q.oracle.randomize(q.checkAnswer(true), source(q.oracle.keep, 1)), 2);
});

test("numeric status and sign: the part ε, the payload and the fair sign of an extra", () => {
  const q = SURVEY.questions[1]; // cigarettes: duchi, optional and conditional
  assert.equal(q.oracle.constructor.name, "DuchiStatus");
  assert.ok(Math.abs(q.oracle.epsilonImplemented - 1) < 1e-9, `${q.oracle.epsilonImplemented}`);
  assert.deepEqual(q.extraValue("declined"), { status: 1 });
  assert.deepEqual(q.extraValue("not_applicable"), { status: 2 });
  for (const input of [0, 60, 30, { status: 1 }, { status: 2 }])
    assert.match(q.oracle.encode(q.oracle.randomize(input)), /^0[0-2]0[01]$/);
  // Status kept (0: below keep), then the sign's draw: 2^52 - 1 gives +1 and 2^52 gives -1 (a
  // fair coin for an extra, whatever the range).
  const source = (sign) => new ArraySource(Uint8Array.of(...draw(0), 0, ...draw(sign)));
  assert.deepEqual(q.oracle.randomize({ status: 1 }, source(R / 2 - 1)), [1, 1]);
  assert.deepEqual(q.oracle.randomize({ status: 1 }, source(R / 2)), [1, -1]);
  assert.deepEqual(q.oracle.randomize({ status: 2 }, source(R / 2)), [2, -1]);
});

/** A fake aggregator serving `definition` signed with a fresh Ed25519 key. */
async function signedAggregator(definition) {
  const pair = await crypto.subtle.generateKey("Ed25519", true, ["sign", "verify"]);
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  const signature = new Uint8Array(
    await crypto.subtle.sign("Ed25519", pair.privateKey, canonicalBytes(definition)),
  );
  const document = { status: "open", definition, signature: b64encode(signature) };
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, ...init });
    if (init.method === "GET") return new Response(JSON.stringify(document), { status: 200 });
    return new Response("{}", { status: 201 });
  };
  return { fetch, calls, key: b64encode(raw) };
}

test("every path through the skip logic sends the same requests (count, sizes, order, headers)", async () => {
  const shapes = new Map();
  for (const c of TABLE.cases.filter((x) => !x.refused)) {
    const agg = await signedAggregator(TABLE.definition);
    const client = new SurveyClient("https://agg.example", {
      publicKey: agg.key,
      storage: new MemoryStorage(),
      fetch: agg.fetch,
    });
    const survey = await client.fetchSurvey(TABLE.definition.id);
    const original = Math.random;
    Math.random = () => {
      throw new Error("Math.random was called"); // the CSPRNG only, on every path
    };
    let receipt;
    try {
      receipt = await client.answer(survey, c.answers);
    } finally {
      Math.random = original;
    }
    assert.equal(receipt.reportIds.length, SURVEY.questions.length, c.name);
    assert.ok(Math.abs(receipt.epsilonCharged - survey.totalEpsilon) < 1e-12, c.name);
    const shape = JSON.stringify(
      agg.calls.map((call) => {
        const body = call.body && JSON.parse(call.body);
        return [
          call.method,
          call.url,
          call.headers,
          call.body?.length,
          body?.reports?.map((r) => [r.question, r.payload.length]),
        ];
      }),
    );
    shapes.set(shape, [...(shapes.get(shape) ?? []), c.name]);
  }
  assert.equal(shapes.size, 1, JSON.stringify([...shapes.values()]));
});
