// Unary encoding, symmetric (SUE, basic one-time RAPPOR) and optimized (OUE): shared/mechanisms/unary.py,
// docs/protocol.md §4. Wang, Blocki, Li, Jha (USENIX Security 2017) §4.3; Erlingsson, Pihur,
// Korolova, "RAPPOR" (CCS 2014).

import { Mechanism, RESOLUTION, ReportError, SYSTEM, checkInteger, checkThreshold, fromHex, logRatio, toHex } from "./mechanism.js";

export class UnaryEncoding extends Mechanism {
  constructor({ domainSize, oneIfTrue, oneIfOther }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 4096);
    this.oneIfTrue = checkThreshold("one_if_true", oneIfTrue);
    this.oneIfOther = checkThreshold("one_if_other", oneIfOther);
  }

  get reportBytes() { return (this.domainSize + 7) >> 3; }
  get epsilonImplemented() {
    const p = BigInt(this.oneIfTrue), q = BigInt(this.oneIfOther), R = BigInt(RESOLUTION);
    return Math.abs(logRatio(p * (R - q), q * (R - p)));
  }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value), bits = new Uint8Array(this.domainSize);
    for (let v = 0; v < bits.length; v++) bits[v] = source.uniform53Wide() < (v === truth ? this.oneIfTrue : this.oneIfOther); // d draws, whatever the value
    return bits;
  }

  describe(report, labels) { return `marked: ${labels.filter((_, v) => report[v]).join(", ") || "none"}`; }

  /** Bit v is bit v mod 8 of byte floor(v / 8); padding bits are zero. */
  encode(report) {
    const out = new Uint8Array(this.reportBytes);
    report.forEach((bit, v) => { out[v >> 3] |= bit << (v & 7); });
    return toHex(out);
  }

  decode(text) {
    const data = fromHex(text, this.reportBytes);
    if (data.at(-1) >> (8 - (8 * data.length - this.domainSize))) throw new ReportError(`${this.name} report has nonzero padding bits`);
    return Uint8Array.from({ length: this.domainSize }, (_, v) => (data[v >> 3] >> (v & 7)) & 1);
  }
}

/** Symmetric unary encoding: each bit kept with e^{ε/2}/(e^{ε/2}+1). */
export class SUE extends UnaryEncoding { static mechanismName = "sue"; }

/** Optimized unary encoding: true bit 1 w.p. 1/2, other bits 1 w.p. 1/(e^ε+1). */
export class OUE extends UnaryEncoding { static mechanismName = "oue"; }
