// Binary randomized response: shared/mechanisms/binary_rr.py and the per-option split of multiple
// choice (OptionwiseRR in shared/survey.py, docs/protocol.md §5.2). Warner, JASA 1965.

import { GRR } from "./grr.js";
import { InvalidSurvey, InvalidValue, Mechanism } from "./mechanism.js";

/** GRR with d = 2 on 0/1 or false/true; the wire is one byte, 00 or 01. */
export class BinaryRR extends GRR {
  static mechanismName = "binary_rr";

  constructor({ keep, domainSize = 2 }) {
    if (domainSize !== 2) throw new InvalidSurvey("binary_rr needs exactly two categories");
    super({ domainSize, keep });
  }

  checkValue(value) {
    if ([0, 1, false, true].includes(value)) return +value;
    throw new InvalidValue(`value must be true/false or 0/1, got ${value}`);
  }
}

/** Multiple choice: binary randomized response for each of m options at option_epsilon = ε / m. */
export class OptionwiseRR extends Mechanism {
  static mechanismName = "binary_rr";

  constructor({ options, epsilon, optionEpsilon, keep }) {
    super();
    if (optionEpsilon !== epsilon / options) throw new InvalidSurvey(`option_epsilon must be epsilon / ${options}`);
    Object.assign(this, { options, optionEpsilon, optionOracle: new BinaryRR({ keep }), fields: Array(options).fill([1, 2]) });
  }

  get epsilonImplemented() { return this.optionOracle.epsilonImplemented * this.options; }
  randomize(bits, source) { return bits.map((bit) => this.optionOracle.randomize(bit, source)); }
  describe(report, labels) { return labels.map((label, i) => `${label}: ${report[i] ? "yes" : "no"}`).join("; "); }
}
