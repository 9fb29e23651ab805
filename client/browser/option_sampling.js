// Option sampling: multiple choice at the full ε, one option per report. Mirrors
// shared/mechanisms/option_sampling.py. Wang, Li, Jha (S&P 2018); Qin et al. (CCS 2016).
// Algorithm and wire: docs/protocol.md §5.2 (the option index is drawn independently of the answer).

import { InvalidValue, Mechanism, RESOLUTION, SYSTEM, checkInteger, checkThreshold, logRatio, widthBytes } from "./randomness.js";

export class OptionSampling extends Mechanism {
  static mechanismName = "option_sampling";

  constructor({ options, keep }) {
    super();
    this.options = checkInteger("options", options, 2, 65536);
    this.keep = checkThreshold("keep", keep);
    this.fields = [[widthBytes(options), options], [1, 2]]; // option, membership bit
  }

  get epsilonImplemented() { return Math.abs(logRatio(this.keep, RESOLUTION - this.keep)); }

  checkValue(value) {
    if (!Array.isArray(value) || value.length !== this.options || value.some((b) => b !== 0 && b !== 1)) throw new InvalidValue(`value must be ${this.options} bits`);
    return value;
  }

  randomize(value, source = SYSTEM) {
    const bits = this.checkValue(value);
    // Both draws happen for every answer.
    const option = source.randbelow(this.options);
    const keep = source.uniform53() < this.keep;
    return [option, keep ? bits[option] : 1 - bits[option]];
  }
}
