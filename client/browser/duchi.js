// Duchi's one-bit mechanism for a number in [lo, hi]: mirrors shared/mechanisms/duchi.py.
// Duchi, Jordan, Wainwright (FOCS 2013; JASA 2018).
// t = 2 (x - lo) / (hi - lo) - 1 clamped to [-1, 1]; p = 0.5 + t * slope (IEEE doubles, in
// this order); the threshold floor(p * 2^53), clamped to [1, 2^53 - 1] and then to [low, high];
// report +B (01) when a uniform 53-bit draw is below it, else -B (00).

import { RESOLUTION, SYSTEM, InvalidSurvey, InvalidValue, ReportError, checkThreshold, fromHex, logRatio, threshold } from "./randomness.js";

export class Duchi {
  static mechanismName = "duchi";

  constructor({ lo, hi, low, high, slope }) {
    if (!Number.isFinite(lo) || !Number.isFinite(hi) || !(lo < hi) || !Number.isFinite(hi - lo)) {
      throw new InvalidSurvey(`numeric range must be finite with lo < hi, got [${lo}, ${hi}]`);
    }
    this.lo = lo;
    this.hi = hi;
    this.low = checkThreshold("low", low);
    this.high = checkThreshold("high", high);
    if (this.high !== RESOLUTION - this.low || !(this.low < this.high)) {
      throw new InvalidSurvey("duchi thresholds must satisfy high = 2^53 - low > low");
    }
    if (!Number.isFinite(slope) || slope <= 0 || slope > 0.5) throw new InvalidSurvey(`duchi slope must be in (0, 0.5], got ${slope}`);
    this.slope = slope;
  }

  get name() { return "duchi"; }
  get reportBytes() { return 1; }
  get epsilonImplemented() {
    return Math.max(logRatio(this.high, this.low), logRatio(RESOLUTION - this.low, RESOLUTION - this.high));
  }

  checkValue(value) {
    if (typeof value !== "number" || !(value >= this.lo && value <= this.hi)) {
      throw new InvalidValue(`value must be a number in [${this.lo}, ${this.hi}], got ${value}`);
    }
    return value;
  }

  limit(value) {
    const t = Math.min(1, Math.max(-1, 2 * (value - this.lo) / (this.hi - this.lo) - 1));
    return Math.min(this.high, Math.max(this.low, threshold(0.5 + t * this.slope)));
  }

  randomize(value, source = SYSTEM) {
    const limit = this.limit(this.checkValue(value));
    return source.uniform53() < limit ? 1 : -1;
  }

  encode(report) { return report > 0 ? "01" : "00"; }

  decode(text) {
    const [bit] = fromHex(text, 1);
    if (bit > 1) throw new ReportError("duchi report must be the byte 00 or 01");
    return 2 * bit - 1;
  }
}
