// Optimized local hashing (OLH; BLH with hash_range 2): mirrors shared/mechanisms/local_hashing.py.
// Wang, Blocki, Li, Jha (USENIX Security 2017) §4.4; Bassily & Smith (STOC 2015).
// A fresh 32-bit seed (4 bytes, big-endian), then GRR over [g] of bucket(seed, x).
// p* = keep / 2^53, q* = 1/g. Wire: the seed in 4 bytes, then y big-endian in widthBytes(g).

import {
  RESOLUTION, SYSTEM, ReportError, checkCategory, checkThreshold, fromHex, logRatio, packUint,
  toHex, unpackUint, widthBytes,
} from "./randomness.js";

export const MULTIPLIER = 0x9e3779b1;
export const FMIX_1 = 0x85ebca6b;
export const FMIX_2 = 0xc2b2ae35;
export const MAX_HASH_RANGE = 65536;
export const SEED_BYTES = 4;

/** MurmurHash3's 32-bit finalizer (a bijection on [0, 2^32)). */
export function fmix32(x) {
  x ^= x >>> 16;
  x = Math.imul(x, FMIX_1);
  x ^= x >>> 13;
  x = Math.imul(x, FMIX_2);
  x ^= x >>> 16;
  return x >>> 0;
}

/** H_seed(value) in [0, hashRange): fmix32(seed XOR (value * 0x9E3779B1 mod 2^32)) mod g. */
export function bucket(seed, value, hashRange) {
  return fmix32((seed ^ Math.imul(value, MULTIPLIER)) >>> 0) % hashRange;
}

export class OLH {
  static mechanismName = "olh";

  constructor({ domainSize, hashRange, keep }) {
    if (!Number.isInteger(domainSize) || domainSize < 2 || domainSize > 65536) {
      throw new RangeError(`domainSize must be an integer in [2, 65536], got ${domainSize}`);
    }
    if (!Number.isInteger(hashRange) || hashRange < 2 || hashRange > MAX_HASH_RANGE) {
      throw new RangeError(`hash_range must be an integer in [2, ${MAX_HASH_RANGE}], got ${hashRange}`);
    }
    this.domainSize = domainSize;
    this.hashRange = hashRange;
    this.keep = checkThreshold("keep", keep);
    this.width = widthBytes(hashRange);
  }

  get name() { return "olh"; }
  get reportBytes() { return SEED_BYTES + this.width; }
  get epsilonImplemented() {
    return logRatio(BigInt(this.keep) * BigInt(this.hashRange - 1), RESOLUTION - this.keep);
  }

  checkValue(value) { return checkCategory(value, this.domainSize); }

  randomize(value, source = SYSTEM) {
    const truth = this.checkValue(value);
    const g = this.hashRange;
    // Every draw happens for every value; only the final choice differs.
    const s = source.tokenBytes(SEED_BYTES);
    const seed = ((s[0] << 24) | (s[1] << 16) | (s[2] << 8) | s[3]) >>> 0;
    const keep = source.uniform53() < this.keep;
    let other = source.randbelow(g - 1);
    const hashed = bucket(seed, truth, g);
    if (other >= hashed) other += 1;
    return [seed, keep ? hashed : other];
  }

  encode([seed, y]) {
    const out = new Uint8Array(this.reportBytes);
    packUint(seed, SEED_BYTES, out, 0);
    packUint(y, this.width, out, SEED_BYTES);
    return toHex(out);
  }

  decode(text) {
    const data = fromHex(text, this.reportBytes);
    const seed = unpackUint(data, 0, SEED_BYTES);
    const y = unpackUint(data, SEED_BYTES, this.width);
    if (y >= this.hashRange) throw new ReportError(`olh report bucket outside [0, ${this.hashRange})`);
    return [seed, y];
  }
}
