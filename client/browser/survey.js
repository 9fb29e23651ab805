// Survey definitions (deniable.survey/2): strict validation and the mechanism of every
// question, built from the signed, resolved parameters alone (docs/protocol.md §2, §4).
// Mirrors shared/survey.py; multiple choice is OptionwiseRR (binary RR per option at ε/m).
// A definition whose thresholds imply more ε than it declares is refused.

import { BinaryRR } from "./binary_rr.js";
import { DiscreteLaplace } from "./discrete_laplace.js";
import { Duchi } from "./duchi.js";
import { GRR } from "./grr.js";
import { HRR } from "./hadamard.js";
import { OLH } from "./local_hashing.js";
import { LongitudinalGRR } from "./longitudinal.js";
import { OptionSampling } from "./option_sampling.js";
import { InvalidSurvey, InvalidValue, ReportError, fromHex, toHex } from "./randomness.js";
import { SubsetSelection } from "./subset.js";
import { OUE, SUE } from "./unary.js";

export const FORMAT = "deniable.survey/2";
export const TOLERANCE = 1e-9;
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const TYPES = ["yes_no", "single_choice", "multiple_choice", "numeric"];
const SURVEY_FIELDS = ["format", "id", "title", "description", "questions"];
const QUESTION_FIELDS = ["id", "type", "text", "epsilon", "mechanism", "options", "lo", "hi", "parameters", "longitudinal"];

// The resolved parameters each mechanism's question carries, exactly (shared/resolution.py).
export const PARAMETERS = {
  binary_rr: ["keep"], grr: ["keep"], sue: ["one_if_true", "one_if_other"],
  oue: ["one_if_true", "one_if_other"], olh: ["hash_range", "keep"], hrr: ["keep", "order"],
  subset: ["keep", "subset_size"], duchi: ["high", "low", "slope"], discrete_laplace: ["grid_size"],
  multiple_choice: ["keep", "option_epsilon"], option_sampling: ["keep"],
  longitudinal: ["instantaneous_keep", "keep"],
};

function fail(where, message) { return new InvalidSurvey(`${where}: ${message}`); }

function exactKeys(where, object, allowed, required) {
  if (object === null || typeof object !== "object" || Array.isArray(object)) throw fail(where, "must be an object");
  for (const key of Object.keys(object)) if (!allowed.includes(key)) throw fail(where, `unknown field ${key}`);
  for (const key of required) if (!(key in object)) throw fail(where, `missing field ${key}`);
}

// C0 and C1 control characters and DEL are refused in survey text (descriptions may keep \n).
const CONTROL = /[\x00-\x1f\x7f-\x9f]/, NEWLINE_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

function text(where, value, limit, { empty = false, newlines = false } = {}) {
  if (typeof value !== "string" || value.length > limit || (!empty && !value.trim())) {
    throw fail(where, `must be a non-empty string of at most ${limit} characters`);
  }
  if ((newlines ? NEWLINE_CONTROL : CONTROL).test(value)) throw fail(where, "must not contain control characters");
  return value;
}

function epsilonOf(where, value) {
  if (typeof value !== "number" || !(value >= 0.001 && value <= 20)) throw fail(where, "must be a number in [0.001, 20]");
  return value;
}

/** Multiple choice: one binary randomized response per option at option_epsilon = ε / m. */
export class OptionwiseRR {
  constructor({ options, optionEpsilon, keep }) {
    this.options = options;
    this.optionEpsilon = optionEpsilon;
    this.optionOracle = new BinaryRR({ keep });
  }
  get name() { return "binary_rr"; }
  get reportBytes() { return this.options; }
  get epsilonImplemented() { return this.optionOracle.epsilonImplemented * this.options; }
  randomize(bits, source) { return bits.map((bit) => this.optionOracle.randomize(bit, source)); }
  encode(report) { return toHex(Uint8Array.from(report)); }
  decode(textValue) {
    const data = fromHex(textValue, this.options);
    if (data.some((b) => b > 1)) throw new ReportError("multiple choice report bytes must be 00 or 01");
    return Array.from(data);
  }
}

function buildOracle(where, q) {
  const p = q.parameters;
  const split = q.type === "multiple_choice" && q.mechanism === "binary_rr";
  const kind = q.longitudinal ? "longitudinal" : split ? "multiple_choice" : q.mechanism;
  const expected = PARAMETERS[kind];
  if (!expected) throw fail(where, `unknown mechanism ${q.mechanism}`);
  exactKeys(`${where}.parameters`, p, expected, expected);
  const d = q.type === "yes_no" ? 2 : q.options?.length;
  try {
    if (q.type === "multiple_choice") {
      if (q.mechanism === "option_sampling") return new OptionSampling({ options: d, keep: p.keep });
      if (q.mechanism !== "binary_rr") throw fail(where, "multiple_choice questions use option_sampling or binary_rr per option");
      if (p.option_epsilon !== q.epsilon / d) throw fail(where, `option_epsilon must be epsilon / ${d}`);
      return new OptionwiseRR({ options: d, optionEpsilon: p.option_epsilon, keep: p.keep });
    }
    if (q.type === "numeric") {
      if (q.mechanism === "duchi") return new Duchi({ lo: q.lo, hi: q.hi, ...p });
      if (q.mechanism === "discrete_laplace") return new DiscreteLaplace({ epsilon: q.epsilon, lo: q.lo, hi: q.hi, gridSize: p.grid_size });
      throw fail(where, `mechanism ${q.mechanism} is not numeric`);
    }
    if (q.longitudinal) {
      if (!["grr", "binary_rr"].includes(q.mechanism)) throw fail(where, "longitudinal questions use grr or binary_rr");
      return new LongitudinalGRR({ domainSize: d, keep: p.keep, instantaneousKeep: p.instantaneous_keep });
    }
    switch (q.mechanism) {
      case "binary_rr":
        if (d !== 2) throw fail(where, "binary_rr needs exactly two categories");
        return new BinaryRR({ keep: p.keep });
      case "grr": return new GRR({ domainSize: d, keep: p.keep });
      case "sue": return new SUE({ domainSize: d, oneIfTrue: p.one_if_true, oneIfOther: p.one_if_other });
      case "oue": return new OUE({ domainSize: d, oneIfTrue: p.one_if_true, oneIfOther: p.one_if_other });
      case "olh": return new OLH({ domainSize: d, hashRange: p.hash_range, keep: p.keep });
      case "hrr": return new HRR({ domainSize: d, order: p.order, keep: p.keep });
      case "subset": return new SubsetSelection({ domainSize: d, subsetSize: p.subset_size, keep: p.keep });
      default: throw fail(where, `mechanism ${q.mechanism} is not categorical`);
    }
  } catch (error) {
    if (error instanceof InvalidSurvey) throw error;
    throw fail(where, error.message);
  }
}

export class Question {
  constructor(data, index) {
    let where = `survey.questions[${index}]`;
    exactKeys(where, data, QUESTION_FIELDS, ["id", "type", "text", "epsilon", "mechanism", "parameters"]);
    if (typeof data.id !== "string" || !IDENTIFIER.test(data.id)) throw fail(`${where}.id`, "is not an identifier");
    where = `question ${data.id}`;
    if (!TYPES.includes(data.type)) throw fail(`${where}.type`, `must be one of ${TYPES.join(", ")}`);
    Object.assign(this, { id: data.id, type: data.type, text: text(`${where}.text`, data.text, 2000) });
    this.epsilon = epsilonOf(`${where}.epsilon`, data.epsilon);
    this.mechanism = data.mechanism;
    this.parameters = data.parameters;
    const choice = data.type === "single_choice" || data.type === "multiple_choice";
    if (choice) {
      const limit = data.type === "multiple_choice" ? 64 : 1024;
      const o = data.options;
      if (!Array.isArray(o) || o.length < 2 || o.length > limit || new Set(o).size !== o.length) {
        throw fail(`${where}.options`, `must be 2 to ${limit} distinct labels`);
      }
      o.forEach((label) => text(`${where}.options`, label, 200));
      this.options = o;
    } else if ("options" in data) throw fail(where, `a ${data.type} question has no options`);
    if (data.type === "numeric") {
      if (typeof data.lo !== "number" || typeof data.hi !== "number") throw fail(where, "a numeric question needs lo and hi");
      Object.assign(this, { lo: data.lo, hi: data.hi });
    } else if ("lo" in data || "hi" in data) throw fail(where, `a ${data.type} question has no lo/hi`);
    this.longitudinal = null;
    if (data.longitudinal !== undefined) {
      exactKeys(`${where}.longitudinal`, data.longitudinal, ["key", "instantaneous_epsilon"], ["key", "instantaneous_epsilon"]);
      if (!["yes_no", "single_choice"].includes(data.type)) throw fail(where, "only yes_no and single_choice can be longitudinal");
      if (!IDENTIFIER.test(String(data.longitudinal.key))) throw fail(`${where}.longitudinal.key`, "is not an identifier");
      epsilonOf(`${where}.longitudinal.instantaneous_epsilon`, data.longitudinal.instantaneous_epsilon);
      this.longitudinal = data.longitudinal;
    }
    this.oracle = buildOracle(where, this);
    // The ε the signed thresholds imply must not exceed the ε the question declares.
    const implied = this.oracle instanceof LongitudinalGRR ? this.oracle.permanent.epsilonImplemented : this.oracle.epsilonImplemented;
    if (implied > this.epsilon + TOLERANCE) {
      throw fail(where, `its parameters imply epsilon = ${implied}, more than the declared ${this.epsilon}`);
    }
    if (this.longitudinal && this.oracle.instantaneous.epsilonImplemented > this.longitudinal.instantaneous_epsilon + TOLERANCE) {
      throw fail(where, "its instantaneous_keep implies more than instantaneous_epsilon");
    }
    this.cost = Math.max(this.epsilon, implied);
  }

  get domainSize() { return this.type === "yes_no" ? 2 : this.options?.length; }

  /** The true answer in mechanism terms, or InvalidValue. */
  checkAnswer(answer) {
    const where = `question ${this.id}`;
    if (this.type === "yes_no") {
      if (typeof answer !== "boolean") throw new InvalidValue(`${where}: answer must be true or false`);
      return answer ? 1 : 0;
    }
    if (this.type === "single_choice") {
      const index = this.options.indexOf(answer);
      if (typeof answer !== "string" || index < 0) throw new InvalidValue(`${where}: answer must be one of the options`);
      return index;
    }
    if (this.type === "multiple_choice") {
      if (!Array.isArray(answer) || answer.some((a) => !this.options.includes(a))) {
        throw new InvalidValue(`${where}: answer must be a list of option labels`);
      }
      return this.options.map((label) => (answer.includes(label) ? 1 : 0));
    }
    if (typeof answer !== "number" || !(answer >= this.lo && answer <= this.hi)) {
      throw new InvalidValue(`${where}: answer must be a number in [${this.lo}, ${this.hi}]`);
    }
    return answer;
  }

  /** A plain-words description of a noisy report: what leaves the device. */
  describe(report) {
    const o = this.oracle;
    const labels = this.type === "yes_no" ? ["no", "yes"] : this.options;
    if (o instanceof OptionSampling) return `about “${this.options[report[0]]}” only: ${report[1] ? "yes" : "no"}`;
    if (this.type === "multiple_choice") return this.options.map((l, i) => `${l}: ${report[i] ? "yes" : "no"}`).join("; ");
    if (o instanceof Duchi) return report > 0 ? "high end of the range" : "low end of the range";
    if (o instanceof DiscreteLaplace) return `${+(this.lo + (report * (this.hi - this.lo)) / o.gridSize).toPrecision(6)}`;
    if (o instanceof OLH) return `hash seed ${report[0]}, bucket ${report[1]} of ${o.hashRange}`;
    if (o instanceof HRR) return `Hadamard column ${report[0]}, sign ${report[1] > 0 ? "+" : "−"}`;
    if (o instanceof SubsetSelection) return `one of: ${report.map((v) => labels[v]).join(", ")}`;
    if (o instanceof SUE || o instanceof OUE) return `marked: ${labels.filter((_, v) => report[v]).join(", ") || "none"}`;
    return labels[report];
  }
}

/** A validated /2 definition (InvalidSurvey if anything is off). */
export function parseDefinition(data) {
  exactKeys("survey", data, SURVEY_FIELDS, ["format", "id", "title", "questions"]);
  if (data.format !== FORMAT) throw fail("survey.format", `must be ${FORMAT}, got ${data.format}`);
  if (typeof data.id !== "string" || !IDENTIFIER.test(data.id)) throw fail("survey.id", "is not an identifier");
  const title = text("survey.title", data.title, 200);
  if (!Array.isArray(data.questions) || data.questions.length < 1 || data.questions.length > 100) {
    throw fail("survey.questions", "must be a list of 1 to 100 questions");
  }
  const questions = data.questions.map((q, i) => new Question(q, i));
  if (new Set(questions.map((q) => q.id)).size !== questions.length) throw fail("survey.questions", "question ids must be distinct");
  const keys = questions.filter((q) => q.longitudinal).map((q) => q.longitudinal.key);
  if (new Set(keys).size !== keys.length) throw fail("survey.questions", "longitudinal keys must be distinct");
  return {
    id: data.id, title, description: data.description === undefined ? "" : text("survey.description", data.description, 2000, { empty: true, newlines: true }),
    questions, totalEpsilon: questions.reduce((sum, q) => sum + q.cost, 0),
  };
}
