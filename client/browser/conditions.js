// Which questions are shown (a question's show_if, on the TRUE earlier answers, on this device):
// the twin of the Python core's condition module (docs/protocol.md "show_if"). A condition on a
// question that was not shown, or was declined, is false. Only earlier questions can be named, so
// one pass in order decides every question, and a change can only show or hide later questions.

import { InvalidSurvey } from "./randomness.js";

export const MAX_IN = 64,
  MIN_ITEMS = 2,
  MAX_ITEMS = 16,
  MAX_DEPTH = 4;

const fail = (where, message) => new InvalidSurvey(`${where}: ${message}`, "condition");
const isObject = (x) => x !== null && typeof x === "object" && !Array.isArray(x);

/** The values a question's answers can take that a condition may name (undefined: none). */
function valuesOf(q) {
  if (q.type === "yes_no") return [true, false];
  if (q.type === "single_choice" || q.type === "multiple_choice") return q.options;
  if (q.type === "scale") return q.values;
}

/**
 * Checks a show_if `condition` of the question at `index` against the `earlier` questions (parsed
 * Question objects, in order): the grammar, the references (earlier only: no cycles) and the values.
 */
export function checkCondition(where, condition, earlier, depth = 1) {
  // Depth first: a condition nested thousands deep is refused at the first level too deep.
  if (depth > MAX_DEPTH)
    throw fail(where, `condition nested too deeply: at most ${MAX_DEPTH} levels of all/any`);
  if (!isObject(condition)) throw fail(where, "a condition must be an object");
  const keys = Object.keys(condition);
  if ("all" in condition || "any" in condition) {
    const [key] = keys,
      items = condition[key];
    if (keys.length !== 1) throw fail(where, "all/any must be the only member");
    if (!Array.isArray(items) || items.length < MIN_ITEMS || items.length > MAX_ITEMS)
      throw fail(where, `${key} must be a list of ${MIN_ITEMS} to ${MAX_ITEMS} conditions`);
    items.forEach((c, i) => checkCondition(`${where}.${key}[${i}]`, c, earlier, depth + 1));
    return condition;
  }
  const operator = keys.find((k) => k !== "question");
  if (keys.length !== 2 || !("question" in condition) || !operator)
    throw fail(where, "must be {question, equals | in | includes | between} or {all | any}");
  const q = earlier.find((x) => x.id === condition.question);
  if (!q)
    throw fail(where, `question ${condition.question} is not an earlier question of this survey`);
  const value = condition[operator],
    values = valuesOf(q),
    known = (v) => values?.some((x) => x === v);
  const types = {
    equals: ["yes_no", "single_choice", "scale"],
    in: ["yes_no", "single_choice", "scale"],
    includes: ["multiple_choice"],
    between: ["numeric", "scale"],
  }[operator];
  if (!types) throw fail(where, `unknown condition ${operator}`);
  if (!types.includes(q.type))
    throw fail(where, `${operator} does not apply to a ${q.type} question (${q.id})`);
  if (operator === "equals" || operator === "includes") {
    if (!known(value)) throw fail(where, `${JSON.stringify(value)} is not a value of ${q.id}`);
  } else if (operator === "in") {
    if (!Array.isArray(value) || value.length < 1 || value.length > MAX_IN)
      throw fail(where, `in must be a list of 1 to ${MAX_IN} values`);
    if (new Set(value).size !== value.length) throw fail(where, "in values must be distinct");
    const odd = value.find((v) => !known(v));
    if (odd !== undefined) throw fail(where, `${JSON.stringify(odd)} is not a value of ${q.id}`);
  } else {
    const [lo, hi] = Array.isArray(value) && value.length === 2 ? value : [];
    const [min, max] = q.type === "numeric" ? [q.lo, q.hi] : [values[0], values.at(-1)];
    if (![lo, hi].every((v) => typeof v === "number" && Number.isFinite(v)) || !(lo <= hi))
      throw fail(where, "between must be [lo, hi] with lo <= hi");
    if (lo < min || hi > max) throw fail(where, `between must lie within [${min}, ${max}]`);
  }
  return condition;
}

/**
 * Whether `condition` holds on `given`: question id -> the true answer of each question that was
 * shown and answered (a hidden or declined question is absent, so a condition on it is false).
 */
export function holds(condition, given) {
  if (condition.all) return condition.all.every((c) => holds(c, given));
  if (condition.any) return condition.any.some((c) => holds(c, given));
  if (!Object.hasOwn(given, condition.question)) return false;
  const answer = given[condition.question];
  if (answer === undefined || answer === null) return false;
  if ("equals" in condition) return answer === condition.equals;
  if ("in" in condition) return condition.in.includes(answer);
  if ("includes" in condition) return Array.isArray(answer) && answer.includes(condition.includes);
  const [lo, hi] = condition.between;
  return typeof answer === "number" && answer >= lo && answer <= hi;
}

/**
 * Each question's status on `answers` (question id -> true answer; null or absent: declined):
 * "answered", "declined" or "hidden" (its show_if false), in the questions' order. `answers` for
 * hidden questions are ignored here; the client refuses them (a form drops them first).
 */
export function statuses(questions, answers) {
  const given = {};
  return questions.map((q) => {
    if (q.showIf && !holds(q.showIf, given)) return "hidden";
    const answer = answers[q.id];
    if (answer === undefined || answer === null) return "declined";
    given[q.id] = answer;
    return "answered";
  });
}
