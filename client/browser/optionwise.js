// Multiple choice by binary randomized response per option: OptionwiseRR in shared/survey.py,
// docs/protocol.md §5.2. Warner, JASA 1965.

import { BinaryRR } from "./grr.js";
import { InvalidSurvey, Mechanism } from "./mechanism.js";

/** Binary randomized response for each of m options at option_epsilon = ε / m. */
export class OptionwiseRR extends Mechanism {
  static mechanismName = "binary_rr";

  constructor({ options, epsilon, optionEpsilon, keep }) {
    super();
    if (optionEpsilon !== epsilon / options)
      throw new InvalidSurvey(`option_epsilon must be epsilon / ${options}`);
    Object.assign(this, {
      options,
      optionEpsilon,
      optionOracle: new BinaryRR({ keep }),
      fields: Array(options).fill([1, 2]),
    });
  }

  get epsilonImplemented() {
    return this.optionOracle.epsilonImplemented * this.options;
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
