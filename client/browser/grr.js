// GRR and binary RR (shared/mechanisms/grr.py, binary_rr.py; protocol §4). Kairouz, Oh, Viswanath
// (NeurIPS 2014); Wang, Blocki, Li, Jha (USENIX Security 2017); Warner (JASA 1965).

import {
  InvalidSurvey,
  InvalidValue,
  Mechanism,
  SYSTEM,
  checkInteger,
  checkThreshold,
  keepEpsilon,
  widthBytes,
} from "./mechanism.js";

export class GRR extends Mechanism {
  static mechanismName = "grr";

  constructor({ domainSize, keep }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 65536);
    this.keep = checkThreshold("keep", keep);
    this.fields = [[widthBytes(domainSize), domainSize]];
  }

  get epsilonImplemented() {
    return keepEpsilon(this.keep, this.domainSize - 1);
  }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    // Both draws always: the work never depends on whether the truth is kept.
    const keep = source.uniform53() < this.keep,
      other = source.randbelow(this.domainSize - 1);
    return keep ? truth : other + (other >= truth);
  }

  describe(report, labels) {
    return labels[report];
  }
  words(report, say) {
    return say.labels[report];
  }
  toFields(report) {
    return [report];
  }
  fromFields([value]) {
    return value;
  }
}

/** GRR with d = 2, on 0/1 or false/true. */
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
