// The mechanisms' base and checks (shared/mechanisms/base.py, wire.py; docs/protocol.md §3, §4).

import { InvalidSurvey, InvalidValue, RESOLUTION } from "./randomness.js";

export {
  ArraySource,
  InvalidSurvey,
  InvalidValue,
  RESOLUTION,
  ReportError,
  SYSTEM,
} from "./randomness.js";

/** A threshold out of 2^53, as shared/randomness.py's. */
export const threshold = (p) => Math.min(Math.max(Math.floor(p * RESOLUTION), 1), RESOLUTION - 1);

/** log(a / b) for positive integers, accurate near 1. */
export const logRatio = (a, b) => Math.log1p(Number(BigInt(a) - BigInt(b)) / Number(b));

/**
 * The ε of keeping the truth if uniform53() < keep, against odds a : b (GRR: d - 1 : 1): the
 * absolute log-ratio, as a keep below the odds (the truth rarely kept) reveals the answer too.
 */
export const keepEpsilon = (keep, a = 1, b = 1) =>
  Math.abs(logRatio(BigInt(keep) * BigInt(a), BigInt(RESOLUTION - keep) * BigInt(b)));

export const widthBytes = (upper) => Math.ceil((upper - 1).toString(2).length / 8);

export function checkInteger(name, value, lo, hi) {
  if (Number.isInteger(value) && value >= lo && value <= hi) return value;
  throw new InvalidSurvey(`${name} must be an integer in [${lo}, ${hi}], got ${value}`);
}

export const checkThreshold = (name, value) => checkInteger(name, value, 1, RESOLUTION - 1);

export function checkRange(lo, hi) {
  if (![lo, hi, hi - lo].every(Number.isFinite) || !(lo < hi))
    throw new InvalidSurvey(`numeric range must be finite with lo < hi, got [${lo}, ${hi}]`);
}

export function checkNumber(value, lo, hi) {
  if (typeof value === "number" && value >= lo && value <= hi) return value;
  throw new InvalidValue(`value must be a number in [${lo}, ${hi}], got ${value}`);
}

/** A report's wire: unsigned big-endian `fields` [[bytes, bound], ...] (decoding: wire.js). */
export class Mechanism {
  get name() {
    return this.constructor.mechanismName;
  }
  get reportBytes() {
    return this.fields.reduce((n, [width]) => n + width, 0);
  }
  checkValue(value) {
    if (Number.isInteger(value) && value >= 0 && value < this.domainSize) return value;
    throw new InvalidValue(`value must be an integer in [0, ${this.domainSize}), got ${value}`);
  }
  toFields(report) {
    return report;
  }
  /**
   * What a report says, in the respondent's words: `say` holds the category `labels` and the
   * form's phrases (respond.js); `describe` is the English twin.
   */
  words(report, say) {
    return say.coded([report].flat().join("/"));
  }
  encode(report) {
    const values = this.toFields(report);
    let hex = "";
    for (let i = 0; i < values.length; i++)
      hex += values[i].toString(16).padStart(2 * this.fields[i][0], "0");
    return hex;
  }
}
