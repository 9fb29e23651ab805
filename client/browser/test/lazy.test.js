// The mechanism modules are imported only for the mechanisms a definition names, from a fixed
// table: parseDefinition refuses to guess before they are loaded, a name outside the table
// imports nothing, and loading one survey's mechanisms does not load the others.
// (Its own file: node --test runs each file in a fresh process, with nothing loaded yet.)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { InvalidSurvey, loadMechanisms, parseDefinition } from "../deniable.js";

const VECTORS = JSON.parse(
  readFileSync(new URL("../../../shared/vectors/protocol-vectors.json", import.meta.url), "utf8"),
);
const DEMO = VECTORS.surveys.find((s) => s.name === "demo").definition;
const question = (id) => ({
  format: "deniable.survey/2",
  id: "s",
  title: "T",
  questions: [VECTORS.questions[id]],
});

test("a survey's mechanisms, loaded on demand and only those", async () => {
  assert.throws(() => parseDefinition(DEMO), /is not loaded: await loadMechanisms/);
  await loadMechanisms({
    questions: [
      { type: "yes_no", mechanism: "../randomness" },
      { type: "constructor", mechanism: "grr" },
      null,
      7,
    ],
  });
  await loadMechanisms("not a definition");
  assert.throws(() => parseDefinition(question("olh")), /local_hashing\.js is not loaded/);
  await loadMechanisms(DEMO);
  assert.equal(parseDefinition(DEMO).questions.length, DEMO.questions.length);
  assert.throws(() => parseDefinition(question("olh")), /local_hashing\.js is not loaded/);
  assert.throws(() => parseDefinition(question("laplace")), /discrete_laplace\.js is not loaded/);
  await loadMechanisms(question("laplace"));
  assert.equal(parseDefinition(question("laplace")).questions[0].oracle.name, "discrete_laplace");
  // Whatever is loaded, a mechanism outside a question type's list is refused as invalid.
  assert.throws(
    () =>
      parseDefinition({ ...DEMO, questions: [{ ...VECTORS.questions.yes, mechanism: "duchi" }] }),
    (e) => e instanceof InvalidSurvey && /does not fit/.test(e.message),
  );
});

test("a relayed survey's sealed.js, loaded on demand and only for a relay member, pinned", async () => {
  const relayed = {
    ...DEMO,
    relay: { url: "https://relay.example", min_batch: 10, shuffle_unit: "question" },
  };
  await loadMechanisms(DEMO);
  assert.throws(() => parseDefinition(relayed), /sealed\.js is not loaded: await loadMechanisms/);
  await assert.rejects(
    loadMechanisms(relayed, [
      "mechanism.js",
      "grr.js",
      "option_sampling.js",
      "duchi.js",
      "sealing.js",
    ]),
    /sealed\.js is not pinned/,
  );
  assert.throws(() => parseDefinition(relayed), /sealed\.js is not loaded/); // the refusal imported nothing
  await loadMechanisms(relayed);
  assert.deepEqual(parseDefinition(relayed).relay, {
    url: "https://relay.example",
    origin: "https://relay.example",
    minBatch: 10,
    shuffleUnit: "question",
    noise: null,
  });
  assert.throws(
    () => parseDefinition({ ...relayed, relay: { ...relayed.relay, url: "http://relay.example" } }),
    (e) => e instanceof InvalidSurvey && e.reason === "relay",
  );
});
