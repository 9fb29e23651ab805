// Memoized randomized response for questions asked again and again: shared/mechanisms/longitudinal.py,
// docs/protocol.md §5.4. Erlingsson, Pihur, Korolova, "RAPPOR" (CCS 2014) §3. A permanent GRR
// once per value (remembered), then a fresh instantaneous GRR per report.

import { GRR } from "./grr.js";
import { SYSTEM } from "./randomness.js";

export class LongitudinalGRR extends GRR {
  constructor({ domainSize, keep, instantaneousKeep }) {
    super({ domainSize, keep });
    this.permanent = new GRR({ domainSize, keep });
    this.instantaneous = new GRR({ domainSize, keep: instantaneousKeep });
  }

  permanentResponse(value, source = SYSTEM) { return this.permanent.randomize(value, source); }

  randomize(value, source = SYSTEM, permanent = undefined) {
    if (permanent === undefined) permanent = this.permanentResponse(value, source);
    else this.checkValue(value);
    return this.instantaneous.randomize(permanent, source);
  }
}
