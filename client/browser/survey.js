// Survey definitions (/2; shared/survey.py; protocol §2, §4, §5): strict, mechanisms from signed parameters alone.

import { checkCondition } from "./conditions.js";
import { InvalidSurvey, InvalidValue, PolicyViolation } from "./randomness.js";

export const FORMAT = "deniable.survey/2",
  TOLERANCE = 1e-9;
const TYPES = ["yes_no", "single_choice", "multiple_choice", "numeric", "scale"];
// A scale's points and the values they take (the true answer is the integer point).
const SCALES = { 5: [1, 5], 7: [1, 7], 11: [0, 10] };
// The non-response values ("extras"), in this order, present only when they can occur.
export const EXTRAS = ["declined", "not_applicable"];
// The mechanism registry (shared/mechanisms/__init__.py), mirrored: per oracle class, the wire
// names that build it, the question types it serves, its module, its class, its resolved
// parameters (exactly), and "-" or: "longitudinal" (a memoized question builds it), "binary"
// (single choice: two options only), "extras" (a question that can be declined or not asked builds
// it; docs/protocol.md §5.5), "+grr" (its module imports grr.js, and so on). Only the modules a
// survey names load.
const ORACLES =
  `binary_rr        yes_no,single_choice  grr              BinaryRR        keep                     binary
grr              yes_no,single_choice,scale grr         GRR             keep                     -
sue              yes_no,single_choice,scale unary       SUE             one_if_true,one_if_other -
oue              yes_no,single_choice,scale unary       OUE             one_if_true,one_if_other -
olh              yes_no,single_choice,scale local_hashing OLH           hash_range,keep          -
hrr              yes_no,single_choice,scale hadamard    HRR             keep,order               -
subset           yes_no,single_choice,scale subset      SubsetSelection keep,subset_size         -
binary_rr        multiple_choice       optionwise       OptionwiseRR    keep,option_epsilon      +grr
option_sampling  multiple_choice       option_sampling  OptionSampling  keep                     -
duchi            numeric               duchi            Duchi           high,low,slope           -
duchi            numeric               duchi            DuchiStatus     high,keep,low,slope      extras
discrete_laplace numeric               discrete_laplace DiscreteLaplace grid_size                -
binary_rr,grr    yes_no,single_choice  longitudinal     LongitudinalGRR instantaneous_keep,keep  longitudinal,+grr`
    .split("\n")
    .map((row) => {
      const [mechanisms, types, file, name, names, flags] = row
        .split(/ +/)
        .map((c) => c.split(","));
      return { mechanisms, types, file: file[0], name: name[0], names, flags };
    });
export const MECHANISMS = [...new Set(ORACLES.flatMap((o) => o.mechanisms))];
// The oracle classes that name their output reports (a relay can add dummies of each).
const NOISED = ["BinaryRR", "GRR", "LongitudinalGRR", "OptionSampling", "Duchi", "DuchiStatus"];
const loaded = {};

/** The ORACLES row for a question whose type and mechanism fit (an "extras" row if it has extras). */
function oracleOf({ type, mechanism, longitudinal, optional, show_if }) {
  const fits = ORACLES.filter(
    (o) =>
      o.types.includes(type) &&
      o.mechanisms.includes(mechanism) &&
      o.flags.includes("longitudinal") === (longitudinal !== undefined),
  );
  const extras = optional === true || show_if !== undefined;
  return fits.find((o) => o.flags.includes("extras")) && extras
    ? fits.find((o) => o.flags.includes("extras"))
    : fits.find((o) => !o.flags.includes("extras"));
}

/** Whether a mechanism serves two categories only (a single-choice question needs two options). */
const binary = (mechanism) =>
  ORACLES.some((o) => o.flags.includes("binary") && o.mechanisms.includes(mechanism));

/**
 * Imports the modules a definition's questions name, and sealed.js for its relay member if any
 * (the parser is there, beside what a relayed survey seals). `modules`: the files the page pinned by
 * SRI (undefined: any); a module outside it is refused before it is fetched, as the aggregator
 * could otherwise have the page run code that no hash covers by naming another mechanism.
 */
export async function loadMechanisms(definition, modules) {
  for (const q of Array.isArray(definition?.questions) ? definition.questions : []) {
    const { file, name, flags } = oracleOf(Object(q)) ?? {};
    // The module and its static imports (mechanism.js; those its row names, e.g. grr.js).
    const imports = flags?.filter((f) => f.startsWith("+")).map((f) => f.slice(1));
    const needed = file && ["mechanism", ...imports, file];
    const unpinned = modules && needed && needed.find((f) => !modules.includes(`${f}.js`));
    if (unpinned) throw new PolicyViolation(`${unpinned}.js is not pinned by this page`);
    if (file) loaded[name] ??= (await import(`./${file}.js`))[name];
  }
  // A relayed survey: its relay member is parsed by sealed.js (which imports sealing.js).
  if (definition?.relay !== undefined) loaded.parseRelay = (await importSealed(modules)).parseRelay;
}

/** sealed.js (which imports sealing.js), refused before it is fetched unless `modules` pins both. */
export function importSealed(modules) {
  const unpinned = modules && ["sealed.js", "sealing.js"].find((f) => !modules.includes(f));
  if (unpinned) throw new PolicyViolation(`${unpinned} is not pinned by this page`);
  return import("./sealed.js");
}

/** Whether a text is blank: every code point White_Space or Default_Ignorable_Code_Point (protocol §2.2). */
export const isBlank = (value) => BLANK.test(value);
const fail = (where, message, reason) => new InvalidSurvey(`${where}: ${message}`, reason);
// "Not blank" (protocol §2.2): some code point outside White_Space and Default_Ignorable_Code_Point,
// as fixed lists (the same as shared/survey.py's BLANK), not trim(), which strips U+FEFF only.
const BLANK =
  /^[\t-\r \x85\xa0\xad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}]*$/u;

/** An object with exactly the keys named (those ending in "?" optional). */
export function exactKeys(where, object, names) {
  if (object === null || typeof object !== "object" || Array.isArray(object))
    throw fail(where, "must be an object", "wrong-type");
  const allowed = names.map((name) => name.replace(/\?$/, "")),
    odd = Object.keys(object).find((key) => !allowed.includes(key));
  const missing = names.find((name) => !name.endsWith("?") && !(name in object));
  if (odd ?? missing)
    throw fail(
      where,
      odd ? `unknown field ${odd}` : `missing field ${missing}`,
      odd ? "unknown-member" : "missing-member",
    );
}

/** At most `limit` code points, no C0/C1 controls or DEL; non-blank (a description: may be empty, keeps \n). */
function text(where, value, limit, description) {
  if (typeof value !== "string" || !value.isWellFormed())
    throw fail(where, "must be a string (of whole characters)", "wrong-type");
  if ([...value].length > limit)
    throw fail(where, `must be at most ${limit} characters`, "text-length");
  if (!description && isBlank(value))
    throw fail(where, "must not be blank (white space or invisible characters only)", "text-blank");
  if ((description ? /[\0-\t\v-\x1f\x7f-\x9f]/ : /[\0-\x1f\x7f-\x9f]/).test(value))
    throw fail(where, "must not contain control characters", "text-control");
  return value;
}

export function identifier(where, value) {
  if (typeof value === "string" && /^[a-z0-9][a-z0-9_-]{0,63}$/.test(value)) return value;
  throw fail(where, "is not an identifier", "identifier");
}

export function epsilon(where, value) {
  if (typeof value === "number" && value >= 0.001 && value <= 20) return value;
  throw fail(where, "must be a number in [0.001, 20]", "epsilon");
}

export class Question {
  /** `earlier`: the survey's questions before this one (a show_if may name only those). */
  constructor(data, index, earlier = []) {
    let where = `survey.questions[${index}]`;
    const common = [
      "id",
      "type",
      "text",
      "epsilon",
      "mechanism",
      "parameters",
      "longitudinal?",
      "optional?",
      "help?",
      "show_if?",
    ];
    exactKeys(where, data, [...common, "options?", "lo?", "hi?", "points?", "anchors?"]);
    if (!TYPES.includes(data.type))
      throw fail(`${where}.type`, `must be one of ${TYPES.join(", ")}`, "type");
    const { type, mechanism, options: o, longitudinal: l } = data,
      extra = { numeric: ["lo", "hi"], yes_no: [], scale: ["points?", "anchors?"] }[type] ?? [
        "options",
      ];
    exactKeys(where, data, [...common, ...extra]);
    where = `question ${identifier(`${where}.id`, data.id)}`;
    if (data.optional !== undefined && typeof data.optional !== "boolean")
      throw fail(`${where}.optional`, "must be true or false", "wrong-type");
    Object.assign(this, {
      id: data.id,
      type,
      text: text(`${where}.text`, data.text, 2000),
      epsilon: epsilon(`${where}.epsilon`, data.epsilon),
      mechanism,
      parameters: data.parameters,
      longitudinal: l ?? null,
      lo: data.lo,
      hi: data.hi,
      optional: data.optional === true,
      help: data.help === undefined ? "" : text(`${where}.help`, data.help, 2000, true),
    });
    if (data.help !== undefined && isBlank(data.help))
      throw fail(`${where}.help`, "must not be blank (omit it instead)", "text-blank");
    if (type === "scale") {
      if (!Object.hasOwn(SCALES, data.points))
        throw fail(`${where}.points`, "must be 5, 7 or 11", "points");
      const [first, last] = SCALES[data.points];
      this.points = data.points;
      this.values = Array.from({ length: last - first + 1 }, (_, i) => first + i);
      if (data.anchors !== undefined) {
        exactKeys(`${where}.anchors`, data.anchors, ["low", "high"]);
        this.anchors = {
          low: text(`${where}.anchors.low`, data.anchors.low, 200),
          high: text(`${where}.anchors.high`, data.anchors.high, 200),
        };
      } else this.anchors = null;
    }
    this.showIf =
      data.show_if === undefined ? null : checkCondition(`${where}.show_if`, data.show_if, earlier);
    // The non-response values this question can take, in the order of EXTRAS.
    this.extras = EXTRAS.filter((e) => (e === "declined" ? this.optional : this.showIf));
    if (type.endsWith("_choice")) {
      const limit = type === "multiple_choice" ? 64 : 1024;
      if (!Array.isArray(o))
        throw fail(`${where}.options`, "must be a list of labels", "wrong-type");
      if (o.length < 2 || o.length > limit)
        throw fail(`${where}.options`, `must be 2 to ${limit} labels`, "options-count");
      this.options = o.map((label) => text(`${where}.options`, label, 200));
      if (new Set(o).size !== o.length)
        throw fail(`${where}.options`, "labels must be distinct", "options-duplicate");
    }
    if (
      type === "numeric" &&
      !(
        [data.lo, data.hi].every((v) => typeof v === "number") &&
        [data.lo, data.hi, data.hi - data.lo].every(Number.isFinite) &&
        data.lo < data.hi
      )
    ) {
      throw fail(
        where,
        `lo and hi must be finite numbers with lo < hi, got [${data.lo}, ${data.hi}]`,
        "range",
      );
    }
    const { file, name, names, flags } = oracleOf(data) ?? {};
    if (
      !name ||
      (this.extras.length && type === "numeric" && !flags.includes("extras")) ||
      (binary(mechanism) && type === "single_choice" && this.options.length !== 2)
    )
      throw fail(
        where,
        `mechanism ${mechanism} does not fit this${l ? " longitudinal" : ""} question`,
        "mechanism",
      );
    if (flags?.includes("binary") && this.extras.length)
      throw fail(
        where,
        `mechanism ${mechanism} has two values only and cannot also send "prefer not to say" or "not asked": use grr`,
        "mechanism",
      );
    if (this.extras.length && (l || mechanism === "discrete_laplace"))
      throw fail(
        where,
        `a ${l ? "longitudinal question" : "discrete_laplace question"} cannot be optional or conditional`,
        "mechanism",
      );
    exactKeys(`${where}.parameters`, data.parameters, names);
    this.oracleName = name;
    if (!loaded[name])
      throw new Error(`${file}.js is not loaded: await loadMechanisms(definition) first`);
    const parameters = Object.fromEntries(
      Object.entries(data.parameters).map(([k, v]) => [
        k.replace(/_(.)/g, (_, c) => c.toUpperCase()),
        v,
      ]),
    );
    try {
      // the mechanism checks lo, hi and its parameters
      this.oracle = new loaded[name]({
        domainSize: this.domainSize,
        options: this.domainSize,
        epsilon: this.epsilon,
        lo: this.lo,
        hi: this.hi,
        longitudinal: l,
        statuses: 1 + this.extras.length,
        extras: this.extras.length,
        ...parameters,
      });
    } catch (error) {
      // The mechanisms' own refusals: a parameter out of range (or, longitudinal, its ε's).
      throw fail(
        where,
        error.message,
        error.reason && error.reason !== "invalid" ? error.reason : "parameter",
      );
    }
    const implied = this.oracle.epsilonImplemented; // by the signed thresholds (longitudinal: permanent)
    if (implied > this.epsilon + TOLERANCE)
      throw fail(
        where,
        `its parameters imply epsilon = ${implied}, more than the declared ${this.epsilon}`,
        "implied-epsilon",
      );
    this.cost = Math.max(this.epsilon, implied);
  }

  /** The mechanism's domain size: the base values, then the extras (multiple choice: its bits). */
  get domainSize() {
    return this.baseSize + this.extras.length;
  }
  /** How many true answers (categories, or option bits) there are, extras not counted. */
  get baseSize() {
    return this.type === "yes_no" ? 2 : (this.options ?? this.values)?.length;
  }
  get labels() {
    return (
      this.options ?? this.values?.map(String) ?? (this.type === "yes_no" ? ["no", "yes"] : [])
    );
  }
  /** Every category's (or bit's) label, extras too: `words` names them (default: English). */
  allLabels(
    words = { declined: "Prefer not to say", not_applicable: "Not asked (did not apply)" },
  ) {
    return [...this.labels, ...this.extras.map((e) => words[e])];
  }

  /** The mechanism's input for "declined" or "not_applicable" (an extra this question has). */
  extraValue(extra) {
    const at = this.extras.indexOf(extra);
    if (at < 0)
      throw new InvalidValue(
        extra === "declined"
          ? `question ${this.id}: an answer is required (it is not optional)`
          : `question ${this.id}: it is always shown`,
      );
    if (this.type === "multiple_choice")
      return Array.from({ length: this.domainSize }, (_, i) => +(i === this.baseSize + at));
    return this.type === "numeric" ? { status: 1 + at } : this.baseSize + at;
  }

  /** The answer in mechanism terms, or InvalidValue: never coerced. */
  checkAnswer(answer) {
    const o = this.labels,
      refuse = (what) => {
        throw new InvalidValue(`question ${this.id}: answer must be ${what}`);
      };
    switch (this.type) {
      case "yes_no":
        return typeof answer === "boolean" ? +answer : refuse("true or false");
      case "single_choice":
        return o.includes(answer) ? o.indexOf(answer) : refuse("one of the options");
      case "multiple_choice":
        return Array.isArray(answer) && answer.every((a) => o.includes(a))
          ? [...o.map((label) => +answer.includes(label)), ...this.extras.map(() => 0)]
          : refuse("a list of option labels");
      case "scale":
        return this.values.includes(answer)
          ? answer - this.values[0]
          : refuse(`a whole number from ${this.values[0]} to ${this.values.at(-1)}`);
    }
    return typeof answer === "number" && answer >= this.lo && answer <= this.hi
      ? answer
      : refuse(`a number in [${this.lo}, ${this.hi}]`);
  }

  describe(report) {
    return this.oracle.describe(report, this.allLabels());
  }
}

export function parseDefinition(data) {
  exactKeys("survey", data, [
    ...["format", "id", "title", "description?", "questions", "relay?"],
    ...["language?", "translations?"],
  ]);
  if (data.format !== FORMAT)
    throw fail("survey.format", `must be ${FORMAT}, got ${data.format}`, "format");
  const q = data.questions;
  if (!Array.isArray(q))
    throw fail("survey.questions", "must be a list of questions", "wrong-type");
  if (q.length < 1 || q.length > 100)
    throw fail("survey.questions", "must be a list of 1 to 100 questions", "questions-count");
  // The canonical form omits an empty description: "" cannot be the signed bytes of a survey.
  if (data.description === "")
    throw fail("survey.description", "must be omitted rather than empty", "description-empty");
  const survey = {
    id: identifier("survey.id", data.id),
    title: text("survey.title", data.title, 200),
    description:
      "description" in data ? text("survey.description", data.description, 2000, true) : "",
    questions: [],
  };
  for (const [i, d] of q.entries()) survey.questions.push(new Question(d, i, survey.questions));
  const distinct = (values) => new Set(values).size === values.length;
  if (!distinct(survey.questions.map((x) => x.id)))
    throw fail("survey.questions", "question ids must be distinct", "question-id-duplicate");
  if (!distinct(survey.questions.filter((x) => x.longitudinal).map((x) => x.longitudinal.key)))
    throw fail(
      "survey.questions",
      "longitudinal keys must be distinct",
      "longitudinal-key-duplicate",
    );
  survey.totalEpsilon = survey.questions.reduce((sum, x) => sum + x.cost, 0);
  if (data.relay !== undefined && !loaded.parseRelay)
    throw new Error("sealed.js is not loaded: await loadMechanisms(definition) first");
  survey.relay = data.relay === undefined ? null : loaded.parseRelay(data.relay);
  // Relay noise adds dummies per output value: only mechanisms whose report is one value of a
  // small set (shared/mechanisms output_reports(): binary RR, GRR, option sampling, Duchi, and
  // Duchi with a status for an optional or conditional number).
  const unnoised =
    survey.relay?.noise && survey.questions.find((x) => !NOISED.includes(x.oracleName));
  if (unnoised)
    throw fail(
      `question '${unnoised.id}'.mechanism`,
      "relay noise needs a mechanism whose report is one value of a small set (binary " +
        `randomized response, grr, option sampling, duchi); ${unnoised.mechanism} is not`,
      "relay",
    );
  return Object.assign(survey, languageMembers(data, survey));
}

// A survey's language and translations (protocol §5.7; shared/translations.py): words for people
// only, never used to randomize (answers go by index), so a report is the same in every language.
const LANGUAGE = /^[a-z]{2,3}$/;
function language(where, value) {
  if (typeof value === "string" && LANGUAGE.test(value)) return value;
  throw fail(where, "must be a language code of two or three lowercase letters", "language");
}

function languageMembers(data, survey) {
  const lang = data.language === undefined ? "en" : language("survey.language", data.language);
  if (data.language === "en")
    throw fail("survey.language", "must be omitted for English (en)", "language");
  const translations = {},
    given = data.translations;
  if (given === undefined) return { language: lang, translations };
  const where = "survey.translations";
  if (given === null || typeof given !== "object" || Array.isArray(given))
    throw fail(where, "must be an object of languages", "wrong-type");
  const langs = Object.keys(given).sort();
  if (langs.length < 1 || langs.length > 20)
    throw fail(where, "must have 1 to 20 languages", "translation");
  for (const other of langs) {
    language(`${where} key`, other);
    const here = `${where}.${other}`,
      entry = given[other];
    if (other === lang)
      throw fail(here, `${other} is the survey's own language: not a translation`, "translation");
    if (Object(entry) === entry && "description" in entry && !survey.description)
      throw fail(here, "the survey has no description to translate", "translation");
    exactKeys(here, entry, ["title", "questions", ...(survey.description ? ["description"] : [])]);
    if (entry.description === "")
      throw fail(`${here}.description`, "must not be empty", "description-empty");
    const texts = entry.questions;
    if (texts === null || typeof texts !== "object" || Array.isArray(texts))
      throw fail(`${here}.questions`, "must be an object of question ids", "wrong-type");
    const ids = survey.questions.map((q) => q.id),
      unknown = Object.keys(texts)
        .filter((id) => !ids.includes(id))
        .sort()[0],
      absent = ids.find((id) => !Object.hasOwn(texts, id));
    if (unknown !== undefined)
      throw fail(`${here}.questions`, `the survey has no question ${unknown}`, "translation");
    if (absent !== undefined)
      throw fail(`${here}.questions`, `question ${absent} is not translated`, "translation");
    translations[other] = {
      title: text(`${here}.title`, entry.title, 200),
      description: survey.description
        ? text(`${here}.description`, entry.description, 2000, true)
        : "",
      questions: Object.fromEntries(
        survey.questions.map((q) => [
          q.id,
          questionWords(`${here}.questions.${q.id}`, texts[q.id], q),
        ]),
      ),
    };
  }
  return { language: lang, translations };
}

function questionWords(where, data, q) {
  const has = ["text", ...(q.help ? ["help"] : []), ...(q.options ? ["options"] : [])];
  if (q.anchors) has.push("anchors");
  const odd =
    Object(data) === data &&
    ["help", "options", "anchors"].filter((k) => k in data && !has.includes(k)).sort();
  if (odd?.length)
    throw fail(where, `the question has no ${odd.join(", ")} to translate`, "translation");
  exactKeys(where, data, has);
  const words = {
    text: text(`${where}.text`, data.text, 2000),
    help: q.help ? text(`${where}.help`, data.help, 2000, true) : "",
  };
  if (q.help && isBlank(data.help)) throw fail(`${where}.help`, "must not be blank", "text-blank");
  if (q.options) {
    const o = data.options;
    if (!Array.isArray(o)) throw fail(`${where}.options`, "must be a list of labels", "wrong-type");
    if (o.length !== q.options.length)
      throw fail(
        `${where}.options`,
        `must translate all ${q.options.length} options, in order; got ${o.length}`,
        "translation",
      );
    words.options = o.map((label) => text(`${where}.options`, label, 200));
    if (new Set(o).size !== o.length)
      throw fail(`${where}.options`, "labels must be distinct", "options-duplicate");
  }
  if (q.anchors) {
    exactKeys(`${where}.anchors`, data.anchors, ["low", "high"]);
    words.anchors = {
      low: text(`${where}.anchors.low`, data.anchors.low, 200),
      high: text(`${where}.anchors.high`, data.anchors.high, 200),
    };
  }
  return words;
}

/**
 * {language, title, description, questions: {id: {text, help, options, anchors}}}: the survey's
 * texts for a reader wanting `wanted` (language tags, best first): the first language the survey is
 * written or translated in, else its own.
 */
export function wording(survey, wanted) {
  for (const tag of wanted) {
    const primary = String(tag ?? "")
      .toLowerCase()
      .split("-")[0];
    if (primary === survey.language) break;
    if (Object.hasOwn(survey.translations, primary))
      return { language: primary, ...survey.translations[primary] };
  }
  const questions = Object.fromEntries(
    survey.questions.map((q) => [
      q.id,
      { text: q.text, help: q.help, options: q.options, anchors: q.anchors },
    ]),
  );
  return {
    language: survey.language,
    title: survey.title,
    description: survey.description,
    questions,
  };
}
