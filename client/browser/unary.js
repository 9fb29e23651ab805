// Unary encoding, symmetric (SUE, basic one-time RAPPOR) and optimized (OUE):
// mirrors shared/mechanisms/unary.py. Wang, Blocki, Li, Jha (USENIX Security 2017) §4.3;
// Erlingsson, Pihur, Korolova, "RAPPOR" (CCS 2014).
// Bit v is 1 when the v-th uniform u in [0, 2^53) is below oneIfTrue (v = x) or
// oneIfOther (v != x), u read top byte first (docs/protocol.md §4): d bytes give
// every u's top byte; only a byte equal to the threshold's top byte (a tie) reads
// the low 45 bits, uniform45 (6 bytes), ties in order of v. p* = oneIfTrue/2^53,
// q* = oneIfOther/2^53.
// Wire: bit v is bit (v mod 8) of byte floor(v/8), ceil(d/8) bytes, padding bits zero.

import {
  RESOLUTION, SYSTEM, ReportError, checkCategory, checkThreshold, fromHex, logRatio, toHex,
} from "./randomness.js";

const LOW_RANGE = 2 ** 45; // the bits of a uniform below its top byte

/** Uniform in [0, 2^45): 6 bytes little-endian, shifted right by 3 (a tie's low bits). */
function uniform45(source) {
  const b = source.tokenBytes(6);
  const low = b[0] | (b[1] << 8) | (b[2] << 16);
  const high = b[3] | (b[4] << 8) | (b[5] << 16);
  return (low >>> 3) + high * 2 ** 21;
}

export class UnaryEncoding {
  constructor({ domainSize, oneIfTrue, oneIfOther }) {
    if (!Number.isInteger(domainSize) || domainSize < 2 || domainSize > 4096) {
      throw new RangeError(`domainSize must be an integer in [2, 4096], got ${domainSize}`);
    }
    this.domainSize = domainSize;
    this.oneIfTrue = checkThreshold("one_if_true", oneIfTrue);
    this.oneIfOther = checkThreshold("one_if_other", oneIfOther);
    this.bytes = (domainSize + 7) >> 3;
  }

  get name() { return this.constructor.mechanismName; }
  get reportBytes() { return this.bytes; }
  get epsilonImplemented() {
    const p = BigInt(this.oneIfTrue), q = BigInt(this.oneIfOther), R = BigInt(RESOLUTION);
    return Math.abs(logRatio(p * (R - q), q * (R - p)));
  }

  checkValue(value) { return checkCategory(value, this.domainSize); }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    const top = source.tokenBytes(this.domainSize).slice(); // a copy: later reads may reuse a buffer
    const bits = new Uint8Array(this.domainSize);
    // d uniforms are drawn and compared whatever the value.
    for (let v = 0; v < this.domainSize; v++) {
      const limit = v === truth ? this.oneIfTrue : this.oneIfOther;
      const high = Math.floor(limit / LOW_RANGE);
      if (top[v] !== high) bits[v] = top[v] < high ? 1 : 0;
      else bits[v] = uniform45(source) < limit % LOW_RANGE ? 1 : 0;
    }
    return bits;
  }

  encode(report) {
    const out = new Uint8Array(this.bytes);
    for (let v = 0; v < this.domainSize; v++) if (report[v]) out[v >> 3] |= 1 << (v & 7);
    return toHex(out);
  }

  decode(text) {
    const data = fromHex(text, this.bytes);
    const spare = 8 * this.bytes - this.domainSize;
    if (spare && data[this.bytes - 1] >> (8 - spare)) throw new ReportError(`${this.name} report has nonzero padding bits`);
    const bits = new Uint8Array(this.domainSize);
    for (let v = 0; v < this.domainSize; v++) bits[v] = (data[v >> 3] >> (v & 7)) & 1;
    return bits;
  }
}

/** Symmetric unary encoding: each bit kept with e^{ε/2}/(e^{ε/2}+1). */
export class SUE extends UnaryEncoding { static mechanismName = "sue"; }

/** Optimized unary encoding: true bit 1 w.p. 1/2, other bits 1 w.p. 1/(e^ε+1). */
export class OUE extends UnaryEncoding { static mechanismName = "oue"; }
