// Duchi's one-bit mechanism (shared/mechanisms/duchi.py; protocol §4). Duchi, Jordan, Wainwright (FOCS 2013).

import {
  InvalidSurvey,
  Mechanism,
  RESOLUTION,
  SYSTEM,
  checkInteger,
  checkNumber,
  checkRange,
  checkThreshold,
  keepEpsilon,
  logRatio,
  threshold,
} from "./mechanism.js";

export class Duchi extends Mechanism {
  static mechanismName = "duchi";

  constructor({ lo, hi, low, high, slope }) {
    super();
    checkRange(lo, hi);
    Object.assign(this, {
      lo,
      hi,
      low: checkThreshold("low", low),
      high: checkThreshold("high", high),
      slope,
      fields: [[1, 2]],
    }); // 01 = +1
    if (high !== RESOLUTION - low || !(low < high))
      throw new InvalidSurvey("duchi thresholds must satisfy high = 2^53 - low > low");
    if (!(Number.isFinite(slope) && slope > 0 && slope <= 0.5))
      throw new InvalidSurvey(`duchi slope must be in (0, 0.5], got ${slope}`);
  }

  get epsilonImplemented() {
    return Math.max(
      logRatio(this.high, this.low),
      logRatio(RESOLUTION - this.low, RESOLUTION - this.high),
    );
  }

  checkValue(value) {
    return checkNumber(value, this.lo, this.hi);
  }

  /** The threshold for +1 (IEEE doubles, in this order); privacy rests on the clamp alone. */
  limit(value) {
    const t = Math.min(1, Math.max(-1, 2 * ((value - this.lo) / (this.hi - this.lo)) - 1)); // the fraction first: no overflow
    return Math.min(this.high, Math.max(this.low, threshold(0.5 + t * this.slope)));
  }

  randomize(value, source = SYSTEM) {
    return source.uniform53() < this.limit(this.checkValue(value)) ? 1 : -1;
  }
  describe(report) {
    return `${report > 0 ? "high" : "low"} end of the range`;
  }
  words(report, say) {
    return report > 0 ? say.high() : say.low();
  }
  encode(report) {
    return report > 0 ? "01" : "00";
  }
  fromFields([bit]) {
    return 2 * bit - 1;
  }
}

/**
 * A number that may also be declined or not applicable (docs/protocol.md §5.5): a status (0
 * answered, 1 and 2 the extras) by GRR over k = 1 + extras values, then Duchi's sign, a fair coin
 * when the status is an extra; both at the part ε a with e^a (e^a + 1) / 2 = e^ε. Warner (JASA
 * 1965); Kairouz, Oh, Viswanath (NeurIPS 2014); Duchi, Jordan, Wainwright (FOCS 2013).
 */
export class DuchiStatus extends Mechanism {
  static mechanismName = "duchi";

  constructor({ lo, hi, low, high, slope, keep, statuses }) {
    super();
    this.sign = new Duchi({ lo, hi, low, high, slope });
    Object.assign(this, {
      lo,
      hi,
      statuses: checkInteger("statuses", statuses, 2, 3),
      keep: checkThreshold("keep", keep),
      fields: [
        [1, statuses],
        [1, 2],
      ],
    });
  }

  get epsilonImplemented() {
    const status = keepEpsilon(this.keep, this.statuses - 1);
    return Math.max(this.sign.epsilonImplemented, status + logRatio(RESOLUTION, 2 * this.sign.low));
  }

  /** A number in [lo, hi] (status 0), or {status: 1 | 2} for an extra. */
  checkValue(value) {
    if (typeof value === "object" && value !== null && [1, 2].includes(value.status))
      return checkInteger("status", value.status, 1, this.statuses - 1) && value;
    return this.sign.checkValue(value);
  }

  randomize(value, source = SYSTEM) {
    const checked = this.checkValue(value),
      truth = typeof checked === "number" ? 0 : checked.status;
    // Every draw on every path: two for the status, one for the sign.
    const kept = source.uniform53() < this.keep,
      other = source.randbelow(this.statuses - 1),
      status = kept ? truth : other + (other >= truth);
    const limit = truth === 0 ? this.sign.limit(checked) : RESOLUTION / 2;
    return [status, source.uniform53() < limit ? 1 : -1];
  }

  toFields([status, sign]) {
    return [status, sign > 0 ? 1 : 0];
  }
  fromFields([status, bit]) {
    return [status, 2 * bit - 1];
  }
  describe([status, sign], labels) {
    return status ? labels[status - 1] : this.sign.describe(sign);
  }
  words([status, sign], say) {
    return status ? say.labels[status - 1] : this.sign.words(sign, say);
  }
}
