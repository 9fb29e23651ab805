// Option sampling (shared/mechanisms/option_sampling.py; protocol §5.2). Wang, Li, Jha (S&P 2018).

import {
  InvalidValue,
  Mechanism,
  SYSTEM,
  checkInteger,
  checkThreshold,
  keepEpsilon,
  widthBytes,
} from "./mechanism.js";

export class OptionSampling extends Mechanism {
  static mechanismName = "option_sampling";

  constructor({ options, keep }) {
    super();
    this.options = checkInteger("options", options, 2, 65536);
    this.keep = checkThreshold("keep", keep);
    this.fields = [
      [widthBytes(options), options],
      [1, 2],
    ]; // option, membership bit
  }

  get epsilonImplemented() {
    return keepEpsilon(this.keep);
  }

  checkValue(bits) {
    if (
      Array.isArray(bits) &&
      bits.length === this.options &&
      bits.every((b) => b === 0 || b === 1)
    )
      return bits;
    throw new InvalidValue(`value must be ${this.options} bits`);
  }

  randomize(value, source = SYSTEM) {
    const bits = this.checkValue(value);
    // Both draws always, the option independent of the answer.
    const option = source.randbelow(this.options),
      keep = source.uniform53() < this.keep;
    return [option, keep ? bits[option] : 1 - bits[option]];
  }

  describe([option, bit], labels) {
    return `about “${labels[option]}” only: ${bit ? "yes" : "no"}`;
  }
  words([option, bit], say) {
    return say.about(say.labels[option], say.yesNo(bit));
  }
}
