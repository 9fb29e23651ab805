// Subset selection (k-subset): mirrors shared/mechanisms/subset.py.
// Ye & Barg (IEEE Trans. Inf. Theory 2018); Wang, Wu, Hu (2016).
// keep = uniform53 < keep first; then a partial Fisher-Yates over the d - 1 other values with k
// draws randbelow(d - 1 - i), i = 0..k-1 (picked values >= x shift up by one); if kept, the last
// pick is replaced by x. Sorted ascending. Wire: k values, each big-endian in widthBytes(d).

import {
  RESOLUTION, SYSTEM, ReportError, checkCategory, checkThreshold, fromHex, logRatio, packUint,
  toHex, unpackUint, widthBytes,
} from "./randomness.js";

export class SubsetSelection {
  static mechanismName = "subset";

  constructor({ domainSize, subsetSize, keep }) {
    if (!Number.isInteger(domainSize) || domainSize < 2 || domainSize > 4096) {
      throw new RangeError(`domainSize must be an integer in [2, 4096], got ${domainSize}`);
    }
    if (!Number.isInteger(subsetSize) || subsetSize < 1 || subsetSize > domainSize - 1) {
      throw new RangeError(`subset_size must be an integer in [1, ${domainSize - 1}], got ${subsetSize}`);
    }
    this.domainSize = domainSize;
    this.subsetSize = subsetSize;
    this.keep = checkThreshold("keep", keep);
    this.width = widthBytes(domainSize);
  }

  get name() { return "subset"; }
  get reportBytes() { return this.subsetSize * this.width; }
  get epsilonImplemented() {
    const k = BigInt(this.subsetSize), d = BigInt(this.domainSize);
    return Math.abs(logRatio(BigInt(this.keep) * (d - k), BigInt(RESOLUTION - this.keep) * k));
  }

  checkValue(value) { return checkCategory(value, this.domainSize); }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    const k = this.subsetSize, others = this.domainSize - 1;
    const keep = source.uniform53() < this.keep;
    // Always k draws, whatever the value and whether it is kept.
    const swapped = new Map();
    const chosen = [];
    for (let i = 0; i < k; i++) {
      const j = i + source.randbelow(others - i);
      const picked = swapped.has(j) ? swapped.get(j) : j;
      swapped.set(j, swapped.has(i) ? swapped.get(i) : i);
      chosen.push(picked + (picked >= truth ? 1 : 0));
    }
    if (keep) chosen[k - 1] = truth;
    return chosen.sort((a, b) => a - b);
  }

  encode(report) {
    const out = new Uint8Array(this.reportBytes);
    report.forEach((v, i) => packUint(v, this.width, out, i * this.width));
    return toHex(out);
  }

  decode(text) {
    const data = fromHex(text, this.reportBytes);
    const values = [];
    for (let i = 0; i < this.subsetSize; i++) {
      const v = unpackUint(data, i * this.width, this.width);
      if (v >= this.domainSize || (i && v <= values[i - 1])) {
        throw new ReportError(`subset reports must be strictly increasing values in [0, ${this.domainSize})`);
      }
      values.push(v);
    }
    return values;
  }
}
