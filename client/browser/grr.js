// Generalized randomized response (k-RR, direct encoding): mirrors shared/mechanisms/grr.py.
// Kairouz, Oh, Viswanath (NeurIPS 2014); Wang, Blocki, Li, Jha (USENIX Security 2017), "DE".
// Keep the true value when a uniform 53-bit draw is below `keep` (p = keep / 2^53), otherwise
// report one of the d - 1 others uniformly. p* = p, q* = (1 - p)/(d - 1).
// Wire: the value big-endian in widthBytes(d) bytes.

import {
  RESOLUTION, SYSTEM, ReportError, checkCategory, checkThreshold, fromHex, logRatio, packUint,
  toHex, unpackUint, widthBytes,
} from "./randomness.js";

export class GRR {
  static mechanismName = "grr";

  constructor({ domainSize, keep }) {
    if (!Number.isInteger(domainSize) || domainSize < 2 || domainSize > 65536) {
      throw new RangeError(`domainSize must be an integer in [2, 65536], got ${domainSize}`);
    }
    this.domainSize = domainSize;
    this.keep = checkThreshold("keep", keep);
    this.width = widthBytes(domainSize);
  }

  get name() { return this.constructor.mechanismName; }
  get reportBytes() { return this.width; }
  get epsilonImplemented() {
    return logRatio(BigInt(this.keep) * BigInt(this.domainSize - 1), RESOLUTION - this.keep);
  }

  checkValue(value) { return checkCategory(value, this.domainSize); }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    // Both draws happen for every value, so the work done never depends on
    // whether the truth is kept.
    const keep = source.uniform53() < this.keep;
    let other = source.randbelow(this.domainSize - 1);
    if (other >= truth) other += 1;
    return keep ? truth : other;
  }

  encode(report) { return toHex(packUint(report, this.width)); }

  decode(text) {
    const value = unpackUint(fromHex(text, this.width), 0, this.width);
    if (value >= this.domainSize) throw new ReportError(`grr report outside [0, ${this.domainSize})`);
    return value;
  }
}
