// Optimized local hashing (OLH; BLH with hash_range 2): shared/mechanisms/local_hashing.py, docs/protocol.md §4.
// Wang, Blocki, Li, Jha (USENIX Security 2017) §4.4; Bassily & Smith (STOC 2015).

import {
  Mechanism,
  SYSTEM,
  checkInteger,
  checkThreshold,
  keepEpsilon,
  widthBytes,
} from "./mechanism.js";

/** H_seed(value) in [0, g): MurmurHash3's fmix32 of seed XOR (value * 0x9E3779B1 mod 2^32), mod g. */
export function bucket(seed, value, hashRange) {
  let x = (seed ^ Math.imul(value, 0x9e3779b1)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return ((x ^ (x >>> 16)) >>> 0) % hashRange;
}

export class OLH extends Mechanism {
  static mechanismName = "olh";

  constructor({ domainSize, hashRange, keep }) {
    super();
    this.domainSize = checkInteger("domain size", domainSize, 2, 65536);
    this.hashRange = checkInteger("hash_range", hashRange, 2, 65536);
    this.keep = checkThreshold("keep", keep);
    this.fields = [
      [4, 2 ** 32],
      [widthBytes(hashRange), hashRange],
    ]; // seed, bucket
  }

  get epsilonImplemented() {
    return keepEpsilon(this.keep, this.hashRange - 1);
  }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value),
      g = this.hashRange;
    // Every draw for every value; only the final choice differs.
    const seed = source.tokenBytes(4).reduce((n, byte) => n * 256 + byte, 0);
    const keep = source.uniform53() < this.keep,
      other = source.randbelow(g - 1),
      hashed = bucket(seed, truth, g);
    return [seed, keep ? hashed : other + (other >= hashed)];
  }

  describe([seed, y]) {
    return `hash seed ${seed}, bucket ${y} of ${this.hashRange}`;
  }
}
