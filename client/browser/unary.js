// Unary encoding, symmetric (SUE, basic one-time RAPPOR) and optimized (OUE): shared/mechanisms/unary.py,
// docs/protocol.md §4. Wang, Blocki, Li, Jha (USENIX Security 2017) §4.3; Erlingsson, Pihur,
// Korolova, "RAPPOR" (CCS 2014).

import {
  Mechanism,
  RESOLUTION,
  ReportError,
  SYSTEM,
  checkInteger,
  checkThreshold,
  logRatio,
} from "./mechanism.js";

const LOW_RANGE = 2 ** 45; // the bits of a uniform below its top byte

/** A tie's low bits: uniform in [0, 2^45), 6 bytes little-endian shifted right by 3. */
function uniform45(source) {
  const b = source.tokenBytes(6);
  return (
    ((b[0] | (b[1] << 8) | (b[2] << 16)) >>> 3) + (b[3] | (b[4] << 8) | (b[5] << 16)) * 2 ** 21
  );
}

export class UnaryEncoding extends Mechanism {
  constructor({ domainSize, oneIfTrue, oneIfOther }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 4096);
    this.oneIfTrue = checkThreshold("one_if_true", oneIfTrue);
    this.oneIfOther = checkThreshold("one_if_other", oneIfOther);
  }

  get reportBytes() {
    return (this.domainSize + 7) >> 3;
  }
  get epsilonImplemented() {
    const p = BigInt(this.oneIfTrue),
      q = BigInt(this.oneIfOther),
      R = BigInt(RESOLUTION);
    return Math.abs(logRatio(p * (R - q), q * (R - p)));
  }

  /** Bit v is [u_v < threshold], u_v read top byte first: d bytes, then 6 more per tie (§4). */
  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value),
      bits = new Uint8Array(this.domainSize);
    const top = source.tokenBytes(this.domainSize).slice(); // a copy: later reads may reuse a buffer
    for (let v = 0; v < bits.length; v++) {
      // d uniforms compared, whatever the value
      const limit = v === truth ? this.oneIfTrue : this.oneIfOther,
        high = Math.floor(limit / LOW_RANGE);
      bits[v] = top[v] !== high ? top[v] < high : uniform45(source) < limit % LOW_RANGE;
    }
    return bits;
  }

  describe(report, labels) {
    return `marked: ${labels.filter((_, v) => report[v]).join(", ") || "none"}`;
  }
  words(report, say) {
    return say.marked(say.labels.filter((_, v) => report[v]).join(", "));
  }

  /** Bit v is bit v mod 8 of byte floor(v / 8); padding bits are zero. */
  encode(report) {
    const out = new Uint8Array(this.reportBytes);
    report.forEach((bit, v) => {
      out[v >> 3] |= bit << (v & 7);
    });
    let hex = "";
    for (const b of out) hex += (b < 16 ? "0" : "") + b.toString(16);
    return hex;
  }

  fromBytes(data) {
    if (data.at(-1) >> (8 - (8 * data.length - this.domainSize)))
      throw new ReportError(`${this.name} report has nonzero padding bits`);
    return Uint8Array.from({ length: this.domainSize }, (_, v) => (data[v >> 3] >> (v & 7)) & 1);
  }
}

/** Symmetric unary encoding: each bit kept with e^{ε/2}/(e^{ε/2}+1). */
export class SUE extends UnaryEncoding {
  static mechanismName = "sue";
}

/** Optimized unary encoding: true bit 1 w.p. 1/2, other bits 1 w.p. 1/(e^ε+1). */
export class OUE extends UnaryEncoding {
  static mechanismName = "oue";
}
