// Each mechanism words its own reports for the respond page (Mechanism.words, from the phrases
// respond.js hands it): the same words, for every vector question, as the page's earlier
// switch over mechanism names, kept here as the reference.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { describe } from "../respond_fields.js";
import { Question, loadMechanisms } from "../survey.js";

const VECTORS = JSON.parse(
  readFileSync(new URL("../../../shared/vectors/protocol-vectors.json", import.meta.url), "utf8"),
);
await loadMechanisms({ questions: Object.values(VECTORS.questions) });

const t = (key, values) => `${key}${values ? JSON.stringify(values) : ""}`;
const number = (value) => `#${value}`;

/** The respond page's wording before mechanisms owned it. */
function reference(q, report) {
  const labels = q.type === "yes_no" ? [t("no"), t("yes")] : q.options,
    yesNo = (bit) => t(bit ? "yes" : "no");
  switch (q.longitudinal ? "grr" : q.mechanism) {
    case "binary_rr":
      if (q.type === "multiple_choice")
        return labels.map((label, i) => `${label}: ${yesNo(report[i])}`).join("; "); // fall through
    case "grr":
      return labels[report];
    case "option_sampling":
      return t("value_about", { option: labels[report[0]], answer: yesNo(report[1]) });
    case "subset":
      return t("value_one_of", { options: report.map((v) => labels[v]).join(", ") });
    case "sue":
    case "oue":
      return t("value_marked", {
        options: labels.filter((_, v) => report[v]).join(", ") || t("value_none"),
      });
    case "duchi":
      return t(report > 0 ? "value_high" : "value_low");
    case "discrete_laplace":
      return number(Number(q.oracle.describe(report)));
  }
  return t("value_coded", { value: [report].flat().join("/") });
}

const answers = (q) =>
  ({
    yes_no: [true, false],
    single_choice: q.options?.slice(0, 2),
    multiple_choice: [[], q.options?.slice(0, 2)],
  })[q.type] ?? [q.lo, q.hi];

// describe: the phrases the page hands each mechanism (respond_fields.js), not a copy.
test("every mechanism words its reports as the respond page did", () => {
  for (const [id, definition] of Object.entries(VECTORS.questions)) {
    const q = new Question(definition, 0);
    for (const answer of answers(q))
      for (let i = 0; i < 20; i++) {
        const report = q.oracle.randomize(q.checkAnswer(answer));
        assert.equal(describe(q, report, t, number), reference(q, report), id);
      }
  }
});
