// deniable.d.ts against deniable.js: every value the module exports is declared, and every
// declared value exists (type-only declarations aside). No TypeScript compiler is needed.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import * as client from "../deniable.js";

const declarations = readFileSync(new URL("../deniable.d.ts", import.meta.url), "utf8");

test("deniable.d.ts declares exactly the values deniable.js exports", () => {
  const declared = [
    ...declarations.matchAll(/^export (?:abstract )?(?:const|function|class) (\w+)/gm),
  ].map((m) => m[1]);
  assert.deepEqual([...new Set(declared)].sort(), Object.keys(client).sort());
});

test("the declared classes are classes and the functions functions", () => {
  for (const [, kind, name] of declarations.matchAll(
    /^export (?:abstract )?(class|function) (\w+)/gm,
  )) {
    assert.equal(typeof client[name], "function", name);
    assert.equal(/^class\b/.test(client[name].toString()), kind === "class", name);
  }
});

test("the declared methods of SurveyClient exist", () => {
  const body = declarations.slice(declarations.indexOf("export class SurveyClient {"));
  const methods = [...body.slice(0, body.indexOf("\n}")).matchAll(/^ {2}(\w+)\(/gm)]
    .map((m) => m[1])
    .filter((n) => n !== "constructor");
  assert.ok(methods.length >= 4);
  for (const name of methods)
    assert.equal(typeof client.SurveyClient.prototype[name], "function", name);
});
