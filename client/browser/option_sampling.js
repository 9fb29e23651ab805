// Option sampling: multiple choice at the full ε, one option per report. Mirrors
// shared/mechanisms/option_sampling.py. Wang, Li, Jha (S&P 2018); Qin et al. (CCS 2016).
// Draw the option j = randbelow(m) (public, independent of the answer), then keep the
// membership bit b = [j in A] when a uniform 53-bit draw is below `keep`, else flip it.
// Any two answer sets differ by at most e^ε. Wire: j big-endian in widthBytes(m), then 00/01.

import {
  RESOLUTION, SYSTEM, InvalidValue, ReportError, checkThreshold, fromHex, logRatio, packUint, toHex,
  unpackUint, widthBytes,
} from "./randomness.js";

export class OptionSampling {
  static mechanismName = "option_sampling";

  constructor({ options, keep }) {
    if (!Number.isInteger(options) || options < 2 || options > 65536) throw new RangeError(`options must be in [2, 65536], got ${options}`);
    this.options = options;
    this.keep = checkThreshold("keep", keep);
    this.width = widthBytes(options);
  }

  get name() { return "option_sampling"; }
  get reportBytes() { return this.width + 1; }
  get epsilonImplemented() { return Math.abs(logRatio(this.keep, RESOLUTION - this.keep)); }

  checkValue(value) {
    if (!Array.isArray(value) || value.length !== this.options || value.some((b) => b !== 0 && b !== 1)) {
      throw new InvalidValue(`value must be ${this.options} bits`);
    }
    return value;
  }

  randomize(value, source = SYSTEM) {
    const bits = this.checkValue(value);
    // Both draws happen for every answer.
    const option = source.randbelow(this.options);
    const keep = source.uniform53() < this.keep;
    return [option, keep ? bits[option] : 1 - bits[option]];
  }

  encode([option, bit]) {
    const out = new Uint8Array(this.reportBytes);
    packUint(option, this.width, out, 0);
    out[this.width] = bit;
    return toHex(out);
  }

  decode(text) {
    const data = fromHex(text, this.reportBytes);
    const option = unpackUint(data, 0, this.width);
    if (option >= this.options || data[this.width] > 1) {
      throw new ReportError(`option_sampling report needs index in [0, ${this.options}) and bit byte 00 or 01`);
    }
    return [option, data[this.width]];
  }
}
