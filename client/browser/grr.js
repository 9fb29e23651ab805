// Generalized randomized response (k-RR, direct encoding): mirrors shared/mechanisms/grr.py.
// Kairouz, Oh, Viswanath (NeurIPS 2014); Wang, Blocki, Li, Jha (USENIX Security 2017), "DE".
// Algorithm and wire: docs/protocol.md §4 "grr".

import { Mechanism, RESOLUTION, SYSTEM, checkInteger, checkThreshold, logRatio, widthBytes } from "./randomness.js";

export class GRR extends Mechanism {
  static mechanismName = "grr";

  constructor({ domainSize, keep }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 65536);
    this.keep = checkThreshold("keep", keep);
    this.fields = [[widthBytes(domainSize), domainSize]];
  }

  get epsilonImplemented() { return logRatio(BigInt(this.keep) * BigInt(this.domainSize - 1), RESOLUTION - this.keep); }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    // Both draws happen for every value: the work never depends on whether the truth is kept.
    const keep = source.uniform53() < this.keep;
    const other = source.randbelow(this.domainSize - 1);
    return keep ? truth : other + (other >= truth);
  }

  toFields(report) { return [report]; }
  fromFields([value]) { return value; }
}
