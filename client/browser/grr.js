// Generalized randomized response (k-RR, direct encoding): shared/mechanisms/grr.py, docs/protocol.md §4.
// Kairouz, Oh, Viswanath (NeurIPS 2014); Wang, Blocki, Li, Jha (USENIX Security 2017), "DE".

import { Mechanism, SYSTEM, checkInteger, checkThreshold, keepEpsilon, widthBytes } from "./mechanism.js";

export class GRR extends Mechanism {
  static mechanismName = "grr";

  constructor({ domainSize, keep }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 65536);
    this.keep = checkThreshold("keep", keep);
    this.fields = [[widthBytes(domainSize), domainSize]];
  }

  get epsilonImplemented() { return keepEpsilon(this.keep, this.domainSize - 1); }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    // Both draws for every value: the work never depends on whether the truth is kept.
    const keep = source.uniform53() < this.keep, other = source.randbelow(this.domainSize - 1);
    return keep ? truth : other + (other >= truth);
  }

  describe(report, labels) { return labels[report]; }
  toFields(report) { return [report]; }
  fromFields([value]) { return value; }
}
