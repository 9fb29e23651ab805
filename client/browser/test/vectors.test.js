// The JavaScript client against the cross-language vectors (shared/vectors/protocol-vectors.json),
// the same file tests/shared/test_vectors.py checks the Python implementation against.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  ArraySource,
  ReportError,
  InvalidSurvey,
  InvalidValue,
  SignatureError,
  b64encode,
  canonicalize,
  mechanismInputs,
  parseDefinition,
  parseJson,
  statuses,
  verifyDocument,
} from "../deniable.js";
import { followRotation } from "../keychain.js";
import { decode, fromHex } from "../wire.js";
import { bucket } from "../local_hashing.js";
import { Question, isBlank, loadMechanisms } from "../survey.js";

const VECTORS = JSON.parse(
  readFileSync(new URL("../../../shared/vectors/protocol-vectors.json", import.meta.url), "utf8"),
);
await loadMechanisms({ questions: Object.values(VECTORS.questions), relay: {} }); // every mechanism module, and sealed.js (relay members)
const QUESTIONS = Object.fromEntries(
  Object.entries(VECTORS.questions).map(([id, d], i) => [id, new Question(d, i)]),
);
const bytes = (hex) => fromHex(hex, hex.length / 2);

test("canonical bytes (RFC 8785) and Ed25519 signatures of sample surveys", async () => {
  const raw = Uint8Array.from(atob(VECTORS.public_key), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
  for (const vector of VECTORS.surveys) {
    const parsed = JSON.parse(JSON.stringify(vector.definition)); // as a page receives it
    assert.equal(canonicalize(parsed), vector.canonical, vector.name);
    const signature = Uint8Array.from(atob(vector.signature), (c) => c.charCodeAt(0));
    const message = new TextEncoder().encode(vector.canonical);
    assert.ok(
      await crypto.subtle.verify({ name: "Ed25519" }, key, signature, message),
      vector.name,
    );
    message[10] ^= 1;
    assert.ok(!(await crypto.subtle.verify({ name: "Ed25519" }, key, signature, message)));
    parseDefinition(parsed); // valid
  }
});

test("definitions a client must refuse", () => {
  for (const vector of VECTORS.invalid_surveys) {
    assert.throws(
      () => parseDefinition(vector.definition),
      (error) => error instanceof InvalidSurvey && error.reason === vector.code,
      `${vector.reason}: not refused with reason ${vector.code}`,
    );
  }
  // Format /1 needs Python's defaults and repr: every client but Python's refuses it (§2.1).
  const v1 = { ...VECTORS.surveys[0].definition, format: "deniable.survey/1" };
  assert.throws(
    () => parseDefinition(v1),
    (error) => error.reason === "format",
  );
  // Not in the file (JSON text in UTF-8 cannot hold it): an unpaired surrogate, which a form
  // would turn into U+FFFD, leaving that answer impossible to send.
  const demo = structuredClone(VECTORS.surveys[0].definition);
  demo.questions[1].options[0] = "Car\uD800";
  assert.throws(() => parseDefinition(demo), InvalidSurvey);
});

test("true answers a client must refuse, never coerce", () => {
  for (const v of VECTORS.invalid_answers) {
    assert.throws(
      () => QUESTIONS[v.question].checkAnswer(v.answer),
      InvalidValue,
      `${v.question} ${JSON.stringify(v.answer)}`,
    );
  }
});

test("draws from a byte stream", () => {
  const d = VECTORS.draws;
  const source = new ArraySource(bytes(d.stream));
  assert.deepEqual(
    d.uniform53.map(() => source.uniform53()),
    d.uniform53,
  );
  assert.deepEqual(
    d.randbelow.map((r) => source.randbelow(r.upper)),
    d.randbelow.map((r) => r.value),
  );
  assert.equal(source.position, source.bytes.length);
});

test("the OLH hash", () => {
  for (const v of VECTORS.olh_hash)
    assert.equal(bucket(v.seed, v.value, v.hash_range), v.bucket, JSON.stringify(v));
});

test("every mechanism: a fixed byte stream gives the exact report", () => {
  for (const v of VECTORS.reports) {
    const question = QUESTIONS[v.question];
    const source = new ArraySource(bytes(v.stream));
    const report = question.oracle.randomize(question.checkAnswer(v.answer), source);
    assert.equal(
      question.oracle.encode(report),
      v.report,
      `${v.question} ${JSON.stringify(v.answer)}`,
    );
    assert.equal(source.position, source.bytes.length, `${v.question}: every byte used`);
  }
});

test("decode and re-encode; invalid payloads are refused", () => {
  for (const v of VECTORS.decode) {
    const oracle = QUESTIONS[v.question].oracle;
    if (v.valid) assert.equal(oracle.encode(decode(oracle, v.payload)), v.payload);
    else assert.throws(() => decode(oracle, v.payload), ReportError, `${v.question} ${v.payload}`);
  }
});

test("longitudinal questions: the object and the instantaneous ε are checked", () => {
  const survey = (q) => ({ format: "deniable.survey/2", id: "s", title: "T", questions: [q] });
  const mood = VECTORS.questions.mood;
  assert.equal(parseDefinition(survey(mood)).questions[0].longitudinal.key, "mood");
  const bad = [
    { ...mood, longitudinal: { key: "mood" } },
    { ...mood, longitudinal: { ...mood.longitudinal, extra: 1 } },
    { ...mood, longitudinal: null },
    { ...mood, longitudinal: { ...mood.longitudinal, key: "Mood!" } },
    { ...mood, longitudinal: { ...mood.longitudinal, instantaneous_epsilon: 25 } },
    { ...mood, longitudinal: { ...mood.longitudinal, instantaneous_epsilon: 1.4 } }, // instantaneous_keep implies 1.5
    { ...VECTORS.questions.tools, longitudinal: { key: "tools", instantaneous_epsilon: 1 } },
    { ...VECTORS.questions.sue, longitudinal: mood.longitudinal, parameters: mood.parameters },
  ];
  for (const q of bad)
    assert.throws(() => parseDefinition(survey(q)), InvalidSurvey, JSON.stringify(q.longitudinal));
  const twice = survey(mood);
  twice.questions = [
    mood,
    {
      ...VECTORS.questions.habit,
      longitudinal: { ...VECTORS.questions.habit.longitudinal, key: "mood" },
    },
  ];
  assert.throws(() => parseDefinition(twice), /longitudinal keys must be distinct/);
});

test("an optional field's name with its marker is not a field", () => {
  const demo = VECTORS.surveys.find((s) => s.name === "demo").definition;
  assert.throws(
    () => parseDefinition({ ...demo, "description?": "x" }),
    /unknown field description\?/,
  );
  assert.throws(
    () => parseDefinition({ ...demo, questions: [{ ...demo.questions[0], "longitudinal?": {} }] }),
    /unknown field longitudinal\?/,
  );
  const { description, ...bare } = demo;
  assert.ok(description && parseDefinition(bare).description === "");
  assert.throws(() => parseDefinition({ ...demo, description: "" }), InvalidSurvey); // omitted, not empty
});

test("survey documents: parsed strictly, verified under the pin, refused for their reason", async () => {
  const key = Uint8Array.from(atob(VECTORS.public_key), (c) => c.charCodeAt(0));
  for (const v of VECTORS.documents) {
    const open = async () => verifyDocument(parseJson(v.text), v.survey_id, key);
    if (v.code === null) assert.equal((await open()).survey.id, v.survey_id, v.name);
    else
      await assert.rejects(
        open,
        (error) =>
          (error instanceof SignatureError || error instanceof InvalidSurvey) &&
          error.reason === v.code,
        `${v.name}: not refused with reason ${v.code}`,
      );
  }
});

test("parseJson: a member name twice, however it is escaped, and only within one object", () => {
  for (const text of [
    '{"a\\"b":1,"a\\u0022b":2}',
    '[{"k":1,"k":1}]',
    '{"x":{"y":[{"z":1,"z":2}]}}',
  ]) {
    assert.throws(
      () => parseJson(text),
      (error) => error.reason === "duplicate-member",
      text,
    );
  }
  for (const text of [
    "{}",
    '[{}, "a", {"a":1,"b":{"a":2}}]',
    '{"x":[{},{}],"y":{"x":1},"s":"{\\"x\\":1,\\"x\\":2}"}',
  ])
    assert.deepEqual(parseJson(text), JSON.parse(text));
});

test("key rotation: the served chain from the pin, or a refusal that keeps it", async () => {
  const decode = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  for (const v of VECTORS.key_rotation.cases) {
    const pin = { key: decode(v.pin.public_key), sequence: v.pin.sequence, retired: v.pin.retired };
    if (v.expect === null) {
      await assert.rejects(followRotation(pin, v.document), SignatureError, v.name);
      continue;
    }
    const followed = await followRotation(pin, v.document);
    assert.deepEqual(
      {
        public_key: b64encode(followed.key),
        sequence: followed.sequence,
        retired: followed.retired,
      },
      v.expect,
      v.name,
    );
  }
});

test("blank code points (protocol §2.2's fixed lists), at and next to every range end", () => {
  assert.deepEqual(
    VECTORS.blank.filter((v) => isBlank(v.text) !== v.blank).map((v) => v.code_point),
    [],
  );
  // The lists are Unicode's White_Space and Default_Ignorable_Code_Point (in this engine's version).
  const unicode = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}]$/u;
  assert.deepEqual(
    VECTORS.blank.filter((v) => unicode.test(v.text) !== v.blank).map((v) => v.code_point),
    [],
  );
});

// -- optional and conditional questions, scales (protocol §5.5, §5.6; the "questionnaire" section) --
const QUESTIONNAIRE = VECTORS.questionnaire;

test("questionnaire: the signed survey with every new member, and the refusals with their codes", async () => {
  const raw = Uint8Array.from(atob(VECTORS.public_key), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
  for (const vector of QUESTIONNAIRE.surveys) {
    const parsed = JSON.parse(JSON.stringify(vector.definition));
    assert.equal(canonicalize(parsed), vector.canonical, vector.name);
    const signature = Uint8Array.from(atob(vector.signature), (c) => c.charCodeAt(0));
    const message = new TextEncoder().encode(vector.canonical);
    assert.ok(await crypto.subtle.verify({ name: "Ed25519" }, key, signature, message));
    await loadMechanisms(parsed);
    parseDefinition(parsed);
  }
  for (const vector of QUESTIONNAIRE.invalid_surveys) {
    await loadMechanisms(vector.definition).catch(() => {});
    assert.throws(
      () => parseDefinition(vector.definition),
      (error) => error instanceof InvalidSurvey && error.reason === vector.code,
      `${vector.reason}: not refused with reason ${vector.code}`,
    );
  }
});

test("questionnaire: declined and not-applicable reports of every mechanism, byte for byte", async () => {
  const { survey: definition, reports } = QUESTIONNAIRE.nonresponse;
  await loadMechanisms(definition);
  const questions = Object.fromEntries(parseDefinition(definition).questions.map((q) => [q.id, q]));
  const mechanisms = new Set();
  for (const v of reports) {
    const q = questions[v.question],
      source = new ArraySource(bytes(v.stream));
    const input = v.status === "answered" ? q.checkAnswer(v.answer) : q.extraValue(v.status);
    const report = q.oracle.randomize(input, source);
    assert.equal(q.oracle.encode(report), v.report, `${v.question} ${v.status}`);
    assert.equal(
      source.position,
      source.bytes.length,
      `${v.question} ${v.status}: every byte used`,
    );
    assert.equal(q.oracle.encode(decode(q.oracle, v.report)), v.report, `${v.question}: decoded`);
    mechanisms.add(`${q.type} ${q.mechanism} ${v.status}`);
  }
  // Every question with extras, each of its three kinds of value.
  assert.equal(mechanisms.size, 3 * (definition.questions.length - 1));
});

test("questionnaire: each path's statuses and mechanism values, and the answers to refuse", async () => {
  const [{ definition }] = QUESTIONNAIRE.surveys;
  await loadMechanisms(definition);
  const survey = parseDefinition(definition);
  // A number's value is [status, number] in the vectors; the browser's input is the number, or
  // {status} for an extra.
  const value = (q, input) =>
    q.type === "numeric" && q.extras.length
      ? typeof input === "number"
        ? [0, input]
        : [input.status, null]
      : input;
  for (const path of QUESTIONNAIRE.paths) {
    const name = JSON.stringify(path.answers);
    if (path.values === null) {
      assert.throws(() => mechanismInputs(survey, path.answers), InvalidValue, name);
      continue;
    }
    const inputs = mechanismInputs(survey, path.answers),
      now = statuses(survey.questions, path.answers);
    survey.questions.forEach((q, i) => {
      const expected = path.values[q.id],
        status = { hidden: "not_applicable" }[now[i]] ?? now[i];
      assert.equal(status, expected.status, `${name}: ${q.id}`);
      assert.deepEqual(value(q, inputs[i]), expected.value, `${name}: ${q.id}`);
    });
  }
});
