// Duchi's one-bit mechanism (shared/mechanisms/duchi.py; protocol §4). Duchi, Jordan, Wainwright (FOCS 2013).

import {
  InvalidSurvey,
  Mechanism,
  RESOLUTION,
  SYSTEM,
  checkNumber,
  checkRange,
  checkThreshold,
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
