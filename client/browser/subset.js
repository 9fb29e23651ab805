// Subset selection (k-subset): mirrors shared/mechanisms/subset.py.
// Ye & Barg (IEEE Trans. Inf. Theory 2018); Wang, Wu, Hu (2016).
// Algorithm and wire: docs/protocol.md §4 "subset" (a sparse partial Fisher–Yates).

import { Mechanism, RESOLUTION, ReportError, SYSTEM, checkInteger, checkThreshold, logRatio, widthBytes } from "./randomness.js";

export class SubsetSelection extends Mechanism {
  static mechanismName = "subset";

  constructor({ domainSize, subsetSize, keep }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 4096);
    this.subsetSize = checkInteger("subset_size", subsetSize, 1, domainSize - 1);
    this.keep = checkThreshold("keep", keep);
    this.fields = Array(subsetSize).fill([widthBytes(domainSize), domainSize]);
  }

  get epsilonImplemented() {
    const k = BigInt(this.subsetSize), d = BigInt(this.domainSize);
    return Math.abs(logRatio(BigInt(this.keep) * (d - k), BigInt(RESOLUTION - this.keep) * k));
  }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value), k = this.subsetSize;
    const keep = source.uniform53() < this.keep;
    // Always k draws, whatever the value and whether it is kept.
    const swapped = new Map(), chosen = [];
    for (let i = 0; i < k; i++) {
      const j = i + source.randbelow(this.domainSize - 1 - i);
      const picked = swapped.get(j) ?? j;
      swapped.set(j, swapped.get(i) ?? i);
      chosen.push(picked + (picked >= truth));
    }
    if (keep) chosen[k - 1] = truth;
    return chosen.sort((a, b) => a - b);
  }

  fromFields(values) {
    if (values.some((v, i) => i && v <= values[i - 1])) throw new ReportError("subset reports must be strictly increasing");
    return values;
  }
}
