// Subset selection (k-subset): shared/mechanisms/subset.py, docs/protocol.md §4.
// Ye & Barg (IEEE Trans. Inf. Theory 2018); Wang, Wu, Hu (2016).

import {
  Mechanism,
  ReportError,
  SYSTEM,
  checkInteger,
  checkThreshold,
  keepEpsilon,
  widthBytes,
} from "./mechanism.js";

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
    return keepEpsilon(this.keep, this.domainSize - this.subsetSize, this.subsetSize);
  }

  /** keep first; then k draws of a sparse partial Fisher–Yates over the d - 1 other values. */
  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value),
      k = this.subsetSize,
      keep = source.uniform53() < this.keep;
    const swapped = new Map(),
      chosen = [];
    for (let i = 0; i < k; i++) {
      const j = i + source.randbelow(this.domainSize - 1 - i),
        picked = swapped.get(j) ?? j;
      swapped.set(j, swapped.get(i) ?? i);
      chosen.push(picked + (picked >= truth));
    }
    if (keep) chosen[k - 1] = truth;
    return chosen.sort((a, b) => a - b);
  }

  describe(report, labels) {
    return `one of: ${report.map((v) => labels[v]).join(", ")}`;
  }
  words(report, say) {
    return say.oneOf(report.map((v) => say.labels[v]).join(", "));
  }

  fromFields(values) {
    if (values.some((v, i) => v <= values[i - 1]))
      throw new ReportError("subset reports must be strictly increasing");
    return values;
  }
}
