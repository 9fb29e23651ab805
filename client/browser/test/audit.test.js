// ε audit of every JS randomizer on the CSPRNG path (crypto.getRandomValues): 200,000 reports
// per input, a lower bound that exceeds the true ε of a correct mechanism with probability
// <= 1e-6 (audit.js); it must not exceed the claimed ε, and a deliberately broken GRR (the
// keep threshold of 2ε, claiming ε) must be caught. The CSPRNG is not seeded, so "<= claimed"
// fails for a correct mechanism with probability <= 1e-6 per assertion.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { GRR } from "../grr.js";
import { bucket } from "../local_hashing.js";
import { OLH } from "../local_hashing.js";
import { Question, loadMechanisms } from "../survey.js";
import { clopperPearsonLower, clopperPearsonUpper, epsilonLowerBound } from "./audit.js";

const N = 200_000;
const VECTORS = JSON.parse(
  readFileSync(new URL("../../../shared/vectors/protocol-vectors.json", import.meta.url), "utf8"),
);
await loadMechanisms({ questions: Object.values(VECTORS.questions) });
const question = (id) => new Question(VECTORS.questions[id], 0);

function sample(oracle, value, key) {
  const keys = new Array(N);
  for (let i = 0; i < N; i++) keys[i] = key(oracle.randomize(value));
  return keys;
}

function audit(oracle, inputs, claimed, key = (r) => oracle.encode(r)) {
  const samples = inputs.map((v) => sample(oracle, v, key));
  const bounds = [];
  for (let i = 1; i < inputs.length; i++)
    bounds.push(epsilonLowerBound(samples[0], samples[i]).epsilon);
  for (const bound of bounds)
    assert.ok(bound <= claimed, `certified ${bound} > claimed ${claimed}`);
  return bounds;
}

test("Clopper–Pearson bounds match scipy", () => {
  const cases = [
    [5, 100, 1e-3, 0.007517096337111908, 0.1553673058104683],
    [75000, 150000, 3e-8, 0.49300137888701795, 0.506998621112982],
    [1, 150000, 3e-8, 2.0000000299998007e-13, 0.00013588952808382348],
    [149990, 150000, 3e-8, 0.999738796594501, 0.9999942229758862],
    [0, 150000, 3e-8, 0.0, 0.00011547378875732223],
    [30000, 150000, 3e-8, 0.19444021356060046, 0.20563948676454144],
  ];
  for (const [k, n, alpha, lower, upper] of cases) {
    assert.ok(
      Math.abs(clopperPearsonLower(k, n, alpha) - lower) <= 1e-9 * Math.max(lower, 1e-12),
      `lower ${k}/${n}`,
    );
    assert.ok(
      Math.abs(clopperPearsonUpper(k, n, alpha) - upper) <= 1e-9 * upper,
      `upper ${k}/${n}`,
    );
  }
});

const CATEGORICAL = ["yes", "grr5", "sue", "oue", "hrr", "subset_k", "subset", "habit", "mood"];
for (const id of CATEGORICAL) {
  test(`audit ${id}`, () => {
    const q = question(id);
    const inputs = q.type === "yes_no" ? [0, 1] : [0, 1, q.domainSize - 1];
    const bounds = audit(q.oracle, inputs, q.epsilon);
    assert.ok(Math.max(...bounds) > 0, `${id}: the audit has power (some bound above 0)`);
  });
}

test("audit olh (support-set post-processing: the seed makes raw reports unique)", () => {
  const q = question("olh");
  const g = q.oracle.hashRange;
  const support = ([seed, y]) => `${bucket(seed, 0, g) === y}${bucket(seed, 1, g) === y}`;
  audit(q.oracle, [0, 1], q.epsilon, support);
});

test("audit multiple choice (ε/m per option, ε in total)", () => {
  const q = question("tools");
  audit(
    q.oracle,
    [
      [0, 0, 0, 0],
      [1, 1, 1, 1],
      [1, 0, 1, 0],
    ],
    q.epsilon,
  );
});

test("audit option sampling (one option per report, ε for the whole set)", () => {
  const q = question("tools_sampled");
  audit(
    q.oracle,
    [
      [0, 0, 0],
      [1, 1, 1],
      [1, 0, 1],
    ],
    q.epsilon,
  );
});

test("audit duchi and discrete_laplace at the ends of the range", () => {
  for (const id of ["duchi", "laplace"]) {
    const q = question(id);
    audit(q.oracle, [q.lo, q.hi, (q.lo + q.hi) / 2], q.epsilon);
  }
});

test("a broken GRR (the threshold of 2ε claiming ε) is caught", () => {
  const honest = question("grr5").oracle; // ε = 2, d = 5
  const broken = new GRR({ domainSize: 5, keep: question("mood").oracle.keep }); // ε = 3 threshold
  const [bound] = audit.call(null, broken, [0, 1], Infinity);
  assert.ok(bound > 2, `the audit certified only ${bound} for a mechanism claiming 2`);
  assert.ok(honest.epsilonImplemented <= 2 + 1e-9);
});

test("a broken OLH whose hash ignores the seed is caught", () => {
  const q = question("olh");
  const broken = new OLH({ domainSize: 5, hashRange: q.oracle.hashRange, keep: q.oracle.keep });
  broken.randomize = (value) => [value, value]; // deterministic: no privacy at all
  const [bound] = audit(broken, [0, 1], Infinity, ([s, y]) => `${s}:${y}`);
  assert.ok(bound > q.epsilon, `certified only ${bound}`);
});

test("audit the non-response forms: a number's status and sign, and multiple choice's extra bits", async () => {
  // docs/protocol.md §5.5: the worst pairs are an extra against an answer at an end of the range
  // (the number: certified some 0.92 of its ε = 1), and a non-response against every option
  // (binary RR per bit at ε/(m + 1)).
  const { survey } = VECTORS.questionnaire.nonresponse;
  await loadMechanisms(survey);
  const earlier = [new Question(survey.questions[0], 0)];
  const byId = (id) =>
    new Question(
      survey.questions.find((q) => q.id === id),
      1,
      earlier,
    );
  const number = byId("number");
  audit(number.oracle, [{ status: 1 }, number.hi, number.lo, { status: 2 }], number.epsilon);
  const multiple = byId("multiple_rr");
  const inputs = [
    multiple.extraValue("declined"),
    multiple.checkAnswer(["x", "y", "z"]),
    multiple.checkAnswer([]),
    multiple.extraValue("not_applicable"),
  ];
  audit(multiple.oracle, inputs, multiple.epsilon);
});
