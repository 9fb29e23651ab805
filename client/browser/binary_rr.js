// Binary randomized response: mirrors shared/mechanisms/binary_rr.py. Warner, JASA 1965.
// GRR with d = 2; values 0/1 or false/true; the wire is one byte, 00 or 01.

import { GRR } from "./grr.js";
import { InvalidValue } from "./randomness.js";

export class BinaryRR extends GRR {
  static mechanismName = "binary_rr";

  constructor({ keep }) { super({ domainSize: 2, keep }); }

  checkValue(value) {
    if (value === true || value === 1) return 1;
    if (value === false || value === 0) return 0;
    throw new InvalidValue(`value must be true/false or 0/1, got ${value}`);
  }
}
