// Binary randomized response: shared/mechanisms/binary_rr.py. Warner, JASA 1965.
// GRR with d = 2 on 0/1 or false/true; the wire is one byte, 00 or 01.

import { GRR } from "./grr.js";
import { InvalidValue } from "./randomness.js";

export class BinaryRR extends GRR {
  static mechanismName = "binary_rr";

  constructor({ keep }) { super({ domainSize: 2, keep }); }

  checkValue(value) {
    if ([0, 1, false, true].includes(value)) return +value;
    throw new InvalidValue(`value must be true/false or 0/1, got ${value}`);
  }
}
