// Binary randomized response: shared/mechanisms/binary_rr.py. Warner, JASA 1965.

import { GRR } from "./grr.js";
import { InvalidSurvey, InvalidValue } from "./mechanism.js";

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
