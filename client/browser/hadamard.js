// Hadamard randomized response (HRR): mirrors shared/mechanisms/hadamard.py.
// Cormode, Kulkarni, Srivastava (SIGMOD 2018); Acharya, Sun, Zhang (AISTATS 2019).
// K = order = the smallest power of two >= d + 1; value x uses row x + 1. Draw the column
// j = randbelow(K), then keep the sign b = (-1)^popcount((x+1) & j) when a uniform 53-bit
// draw is below `keep`, else flip it. p* = keep / 2^53, q* = 1/2.
// Wire: j big-endian in widthBytes(K) bytes, then 01 for +1 or 00 for -1.

import {
  RESOLUTION, SYSTEM, InvalidSurvey, ReportError, checkCategory, checkThreshold, fromHex,
  logRatio, packUint, toHex, unpackUint, widthBytes,
} from "./randomness.js";

function popcount(x) {
  let count = 0;
  for (; x; x &= x - 1) count++;
  return count;
}

export class HRR {
  static mechanismName = "hrr";

  constructor({ domainSize, order, keep }) {
    if (!Number.isInteger(domainSize) || domainSize < 2 || domainSize > 65536) {
      throw new RangeError(`domainSize must be an integer in [2, 65536], got ${domainSize}`);
    }
    let expected = 1;
    while (expected < domainSize + 1) expected *= 2;
    if (order !== expected) throw new InvalidSurvey(`hrr order must be ${expected} for ${domainSize} values, got ${order}`);
    this.domainSize = domainSize;
    this.order = order;
    this.keep = checkThreshold("keep", keep);
    this.width = widthBytes(order);
  }

  get name() { return "hrr"; }
  get reportBytes() { return this.width + 1; }
  get epsilonImplemented() { return Math.abs(logRatio(this.keep, RESOLUTION - this.keep)); }

  checkValue(value) { return checkCategory(value, this.domainSize); }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    const column = source.randbelow(this.order);
    const keep = source.uniform53() < this.keep;
    const sign = popcount((truth + 1) & column) & 1 ? -1 : 1;
    return [column, keep ? sign : -sign];
  }

  encode([column, sign]) {
    const out = new Uint8Array(this.reportBytes);
    packUint(column, this.width, out, 0);
    out[this.width] = sign > 0 ? 1 : 0;
    return toHex(out);
  }

  decode(text) {
    const data = fromHex(text, this.reportBytes);
    const column = unpackUint(data, 0, this.width);
    const flag = data[this.width];
    if (column >= this.order || flag > 1) {
      throw new ReportError(`hrr report needs index in [0, ${this.order}) and sign byte 00 or 01`);
    }
    return [column, 2 * flag - 1];
  }
}
