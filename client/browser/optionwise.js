// Multiple choice by binary randomized response per option: OptionwiseRR in shared/survey.py,
// docs/protocol.md §5.2. Warner, JASA 1965.

import { BinaryRR } from "./grr.js";
import { InvalidSurvey, Mechanism } from "./mechanism.js";

/**
 * Binary randomized response for each of m options at option_epsilon = ε / m. With e > 0
 * non-response bits (docs/protocol.md §5.5) there are m + e bits but two true answers differ in
 * at most m + 1 of them (every option against a non-response, which sets no option bit): each
 * bit runs at ε / (m + 1), the `distance`.
 */
export class OptionwiseRR extends Mechanism {
  static mechanismName = "binary_rr";

  constructor({ options, epsilon, optionEpsilon, keep, extras = 0 }) {
    super();
    const distance = options - extras + Math.min(extras, 1);
    if (optionEpsilon !== epsilon / distance)
      throw new InvalidSurvey(`option_epsilon must be epsilon / ${distance}`);
    Object.assign(this, {
      options,
      distance,
      optionEpsilon,
      optionOracle: new BinaryRR({ keep }),
      fields: Array(options).fill([1, 2]),
    });
  }

  get epsilonImplemented() {
    return this.optionOracle.epsilonImplemented * this.distance;
  }
  randomize(bits, source) {
    return bits.map((bit) => this.optionOracle.randomize(bit, source));
  }
  describe(report, labels) {
    return labels.map((label, i) => `${label}: ${report[i] ? "yes" : "no"}`).join("; ");
  }
  words(report, say) {
    return say.labels.map((label, i) => `${label}: ${say.yesNo(report[i])}`).join("; ");
  }
}
