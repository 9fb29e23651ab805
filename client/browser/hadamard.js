// Hadamard randomized response (HRR): shared/mechanisms/hadamard.py, docs/protocol.md §4.
// Cormode, Kulkarni, Srivastava (SIGMOD 2018); Acharya, Sun, Zhang (AISTATS 2019).

import {
  InvalidSurvey,
  Mechanism,
  SYSTEM,
  checkInteger,
  checkThreshold,
  keepEpsilon,
  widthBytes,
} from "./mechanism.js";

export class HRR extends Mechanism {
  static mechanismName = "hrr";

  constructor({ domainSize, order, keep }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 65536);
    const K = 2 ** (32 - Math.clz32(domainSize)); // the smallest power of two >= d + 1
    if (order !== K)
      throw new InvalidSurvey(`hrr order must be ${K} for ${domainSize} values, got ${order}`);
    this.order = order;
    this.keep = checkThreshold("keep", keep);
    this.fields = [
      [widthBytes(order), order],
      [1, 2],
    ]; // column j, sign (01 = +1, 00 = -1)
  }

  get epsilonImplemented() {
    return keepEpsilon(this.keep);
  }

  /** Row x + 1, column j: the sign (-1)^popcount((x + 1) & j), kept or flipped. */
  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value),
      column = source.randbelow(this.order),
      keep = source.uniform53() < this.keep;
    let sign = 1;
    for (let x = (truth + 1) & column; x; x &= x - 1) sign = -sign;
    return [column, keep ? sign : -sign];
  }

  describe([column, sign]) {
    return `Hadamard column ${column}, sign ${sign > 0 ? "+" : "−"}`;
  }

  toFields([column, sign]) {
    return [column, +(sign > 0)];
  }
  fromFields([column, flag]) {
    return [column, 2 * flag - 1];
  }
}
