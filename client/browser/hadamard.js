// Hadamard randomized response (HRR): mirrors shared/mechanisms/hadamard.py.
// Cormode, Kulkarni, Srivastava (SIGMOD 2018); Acharya, Sun, Zhang (AISTATS 2019).
// Algorithm and wire: docs/protocol.md §4 "hrr" (value x uses row x + 1 of the order-K matrix).

import { InvalidSurvey, Mechanism, RESOLUTION, SYSTEM, checkInteger, checkThreshold, logRatio, widthBytes } from "./randomness.js";

export class HRR extends Mechanism {
  static mechanismName = "hrr";

  constructor({ domainSize, order, keep }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 65536);
    const expected = 2 ** (32 - Math.clz32(domainSize)); // the smallest power of two >= d + 1
    if (order !== expected) throw new InvalidSurvey(`hrr order must be ${expected} for ${domainSize} values, got ${order}`);
    this.order = order;
    this.keep = checkThreshold("keep", keep);
    this.fields = [[widthBytes(order), order], [1, 2]]; // column, sign (01 = +1, 00 = -1)
  }

  get epsilonImplemented() { return Math.abs(logRatio(this.keep, RESOLUTION - this.keep)); }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    const column = source.randbelow(this.order);
    const keep = source.uniform53() < this.keep;
    let parity = 0;
    for (let x = (truth + 1) & column; x; x &= x - 1) parity ^= 1;
    const sign = parity ? -1 : 1;
    return [column, keep ? sign : -sign];
  }

  toFields([column, sign]) { return [column, +(sign > 0)]; }
  fromFields([column, flag]) { return [column, 2 * flag - 1]; }
}
