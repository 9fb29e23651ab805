// Survey definitions (deniable.survey/2): strict validation, and each question's mechanism built
// from the signed, resolved parameters alone; mirrors shared/survey.py (docs/protocol.md §2, §4, §5).

import { BinaryRR } from "./binary_rr.js";
import { DiscreteLaplace } from "./discrete_laplace.js";
import { Duchi } from "./duchi.js";
import { GRR } from "./grr.js";
import { HRR } from "./hadamard.js";
import { OLH } from "./local_hashing.js";
import { LongitudinalGRR } from "./longitudinal.js";
import { OptionSampling } from "./option_sampling.js";
import { InvalidSurvey, InvalidValue, Mechanism } from "./randomness.js";
import { SubsetSelection } from "./subset.js";
import { OUE, SUE } from "./unary.js";

export const FORMAT = "deniable.survey/2";
export const TOLERANCE = 1e-9;
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const TYPES = ["yes_no", "single_choice", "multiple_choice", "numeric"];

/** Multiple choice split per option: binary randomized response for each at option_epsilon = ε / m. */
export class OptionwiseRR extends Mechanism {
  constructor({ options, optionEpsilon, keep }) {
    super();
    Object.assign(this, { options, optionEpsilon, optionOracle: new BinaryRR({ keep }), fields: Array(options).fill([1, 2]) });
  }
  get name() { return "binary_rr"; }
  get epsilonImplemented() { return this.optionOracle.epsilonImplemented * this.options; }
  randomize(bits, source) { return bits.map((bit) => this.optionOracle.randomize(bit, source)); }
}

// Per mechanism: the resolved parameters its question carries, exactly (shared/resolution.py),
// and how its oracle is built from them and d (q: the question; only valid parameters get here).
const THRESHOLDS = ["one_if_true", "one_if_other"];
const MECHANISMS = {
  binary_rr: [["keep"], (p, d) => { if (d !== 2) throw new InvalidSurvey("binary_rr needs exactly two categories"); return new BinaryRR(p); }],
  grr: [["keep"], (p, domainSize) => new GRR({ domainSize, ...p })],
  sue: [THRESHOLDS, (p, domainSize) => new SUE({ domainSize, oneIfTrue: p.one_if_true, oneIfOther: p.one_if_other })],
  oue: [THRESHOLDS, (p, domainSize) => new OUE({ domainSize, oneIfTrue: p.one_if_true, oneIfOther: p.one_if_other })],
  olh: [["hash_range", "keep"], (p, domainSize) => new OLH({ domainSize, hashRange: p.hash_range, keep: p.keep })],
  hrr: [["keep", "order"], (p, domainSize) => new HRR({ domainSize, ...p })],
  subset: [["keep", "subset_size"], (p, domainSize) => new SubsetSelection({ domainSize, subsetSize: p.subset_size, keep: p.keep })],
  option_sampling: [["keep"], (p, options) => new OptionSampling({ options, ...p })],
  optionwise: [["keep", "option_epsilon"], (p, options, q) => {
    if (p.option_epsilon !== q.epsilon / options) throw new InvalidSurvey(`option_epsilon must be epsilon / ${options}`);
    return new OptionwiseRR({ options, optionEpsilon: p.option_epsilon, keep: p.keep });
  }],
  longitudinal: [["instantaneous_keep", "keep"], (p, domainSize) => new LongitudinalGRR({ domainSize, keep: p.keep, instantaneousKeep: p.instantaneous_keep })],
  duchi: [["high", "low", "slope"], (p, _, q) => new Duchi({ lo: q.lo, hi: q.hi, ...p })],
  discrete_laplace: [["grid_size"], (p, _, q) => new DiscreteLaplace({ epsilon: q.epsilon, lo: q.lo, hi: q.hi, gridSize: p.grid_size })],
};
// The mechanisms each type of question may name; a longitudinal question's, whatever its type.
const ALLOWED = {
  yes_no: ["binary_rr", "grr", "sue", "oue", "olh", "hrr", "subset"], multiple_choice: ["binary_rr", "option_sampling"],
  numeric: ["duchi", "discrete_laplace"], longitudinal: ["grr", "binary_rr"],
};
ALLOWED.single_choice = ALLOWED.yes_no;

const fail = (where, message) => new InvalidSurvey(`${where}: ${message}`);

/** An object with only `allowed` keys and every `required` one (default: all allowed). */
function exactKeys(where, object, allowed, required = allowed) {
  if (object === null || typeof object !== "object" || Array.isArray(object)) throw fail(where, "must be an object");
  for (const key of Object.keys(object)) if (!allowed.includes(key)) throw fail(where, `unknown field ${key}`);
  for (const key of required) if (!(key in object)) throw fail(where, `missing field ${key}`);
}

/** Survey text: a string of at most `limit` characters without C0/C1 control characters or DEL,
 * non-empty (a description may be empty and keep \n). */
function text(where, value, limit, description = false) {
  if (typeof value !== "string" || value.length > limit || (!description && !value.trim())) throw fail(where, `must be a non-empty string of at most ${limit} characters`);
  if ((description ? /[\0-\t\v-\x1f\x7f-\x9f]/ : /[\0-\x1f\x7f-\x9f]/).test(value)) throw fail(where, "must not contain control characters");
  return value;
}

function identifier(where, value) {
  if (typeof value !== "string" || !IDENTIFIER.test(value)) throw fail(where, "is not an identifier");
  return value;
}

function epsilon(where, value) {
  if (typeof value !== "number" || !(value >= 0.001 && value <= 20)) throw fail(where, "must be a number in [0.001, 20]");
  return value;
}

export class Question {
  constructor(data, index) {
    exactKeys(`survey.questions[${index}]`, data, ["id", "type", "text", "epsilon", "mechanism", "options", "lo", "hi", "parameters", "longitudinal"],
      ["id", "type", "text", "epsilon", "mechanism", "parameters"]);
    const where = `question ${identifier(`survey.questions[${index}].id`, data.id)}`, type = data.type;
    if (!TYPES.includes(type)) throw fail(`${where}.type`, `must be one of ${TYPES.join(", ")}`);
    Object.assign(this, { id: data.id, type, text: text(`${where}.text`, data.text, 2000), epsilon: epsilon(`${where}.epsilon`, data.epsilon),
      mechanism: data.mechanism, parameters: data.parameters, longitudinal: null });
    if (type.endsWith("_choice")) {
      const o = data.options, limit = type === "multiple_choice" ? 64 : 1024;
      if (!Array.isArray(o) || o.length < 2 || o.length > limit || new Set(o).size !== o.length) throw fail(`${where}.options`, `must be 2 to ${limit} distinct labels`);
      o.forEach((label) => text(`${where}.options`, label, 200));
      this.options = o;
    } else if ("options" in data) throw fail(where, `a ${type} question has no options`);
    if (type === "numeric") {
      if (typeof data.lo !== "number" || typeof data.hi !== "number") throw fail(where, "a numeric question needs lo and hi");
      Object.assign(this, { lo: data.lo, hi: data.hi });
    } else if ("lo" in data || "hi" in data) throw fail(where, `a ${type} question has no lo/hi`);
    const l = data.longitudinal;
    if (l !== undefined) {
      exactKeys(`${where}.longitudinal`, l, ["key", "instantaneous_epsilon"]);
      if (!["yes_no", "single_choice"].includes(type)) throw fail(where, "only yes_no and single_choice can be longitudinal");
      identifier(`${where}.longitudinal.key`, l.key);
      epsilon(`${where}.longitudinal.instantaneous_epsilon`, l.instantaneous_epsilon);
      this.longitudinal = l;
    }
    if (!ALLOWED[l ? "longitudinal" : type].includes(data.mechanism)) throw fail(where, `mechanism ${data.mechanism} does not fit this question`);
    // The oracle: the mechanism's, but for the per-option split and longitudinal questions.
    const kind = l ? "longitudinal" : type === "multiple_choice" && data.mechanism === "binary_rr" ? "optionwise" : data.mechanism;
    const [names, build] = MECHANISMS[kind];
    exactKeys(`${where}.parameters`, data.parameters, names);
    try { this.oracle = build(data.parameters, this.domainSize, this); } catch (error) { throw fail(where, error.message); }
    // The ε the signed thresholds imply must not exceed the ε the question declares.
    const implied = (l ? this.oracle.permanent : this.oracle).epsilonImplemented;
    if (implied > this.epsilon + TOLERANCE) throw fail(where, `its parameters imply epsilon = ${implied}, more than the declared ${this.epsilon}`);
    if (l && this.oracle.instantaneous.epsilonImplemented > l.instantaneous_epsilon + TOLERANCE) throw fail(where, "its instantaneous_keep implies more than instantaneous_epsilon");
    this.cost = Math.max(this.epsilon, implied);
  }

  get domainSize() { return this.type === "yes_no" ? 2 : this.options?.length; }
  get labels() { return this.options ?? ["no", "yes"]; }

  /** The true answer in mechanism terms, or InvalidValue (never coerced). */
  checkAnswer(answer) {
    const o = this.options, refuse = (what) => new InvalidValue(`question ${this.id}: answer must be ${what}`);
    if (this.type === "yes_no") {
      if (typeof answer !== "boolean") throw refuse("true or false");
      return +answer;
    }
    if (this.type === "single_choice") {
      if (typeof answer !== "string" || !o.includes(answer)) throw refuse("one of the options");
      return o.indexOf(answer);
    }
    if (this.type === "multiple_choice") {
      if (!Array.isArray(answer) || answer.some((a) => !o.includes(a))) throw refuse("a list of option labels");
      return o.map((label) => +answer.includes(label));
    }
    if (typeof answer !== "number" || !(answer >= this.lo && answer <= this.hi)) throw refuse(`a number in [${this.lo}, ${this.hi}]`);
    return answer;
  }

  /** A plain-words description of a noisy report: what leaves the device. */
  describe(report) {
    const labels = this.labels, yes = (bit) => (bit ? "yes" : "no"), o = this.oracle;
    switch (o instanceof OptionwiseRR ? "optionwise" : o.name) {
      case "option_sampling": return `about “${labels[report[0]]}” only: ${yes(report[1])}`;
      case "optionwise": return labels.map((l, i) => `${l}: ${yes(report[i])}`).join("; ");
      case "duchi": return `${report > 0 ? "high" : "low"} end of the range`;
      case "discrete_laplace": return `${+(this.lo + (report * (this.hi - this.lo)) / o.gridSize).toPrecision(6)}`;
      case "olh": return `hash seed ${report[0]}, bucket ${report[1]} of ${o.hashRange}`;
      case "hrr": return `Hadamard column ${report[0]}, sign ${report[1] > 0 ? "+" : "−"}`;
      case "subset": return `one of: ${report.map((v) => labels[v]).join(", ")}`;
      case "sue": case "oue": return `marked: ${labels.filter((_, v) => report[v]).join(", ") || "none"}`;
    }
    return labels[report];
  }
}

/** A validated /2 definition, or InvalidSurvey if anything is off. */
export function parseDefinition(data) {
  exactKeys("survey", data, ["format", "id", "title", "description", "questions"], ["format", "id", "title", "questions"]);
  if (data.format !== FORMAT) throw fail("survey.format", `must be ${FORMAT}, got ${data.format}`);
  const q = data.questions;
  if (!Array.isArray(q) || q.length < 1 || q.length > 100) throw fail("survey.questions", "must be a list of 1 to 100 questions");
  const survey = { id: identifier("survey.id", data.id), title: text("survey.title", data.title, 200),
    description: "description" in data ? text("survey.description", data.description, 2000, true) : "", questions: q.map((d, i) => new Question(d, i)) };
  const distinct = (values) => new Set(values).size === values.length;
  if (!distinct(survey.questions.map((x) => x.id))) throw fail("survey.questions", "question ids must be distinct");
  if (!distinct(survey.questions.filter((x) => x.longitudinal).map((x) => x.longitudinal.key))) throw fail("survey.questions", "longitudinal keys must be distinct");
  survey.totalEpsilon = survey.questions.reduce((sum, x) => sum + x.cost, 0);
  return survey;
}
