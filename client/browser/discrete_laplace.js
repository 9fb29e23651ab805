// The Laplace mechanism on an integer grid, sampled exactly: mirrors
// shared/mechanisms/discrete_laplace.py. Dwork, McSherry, Nissim, Smith (TCC 2006); Mironov
// (CCS 2012) for why not floats; Canonne, Kamath, Steinke (NeurIPS 2020) Algorithms 1 and 2.
// u = min(G, max(0, G * ((x - lo) / (hi - lo)))); k = floor(u), plus one when a uniform 53-bit
// draw is below round_half_even((u - k) * 2^53); then z = k + Z with P[Z = z] ∝ exp(-ε|z|/G),
// s/t = ε/G as an exact fraction (ε's double is a dyadic rational), every Bernoulli draw
// randbelow(denominator) < numerator in BigInt arithmetic. Wire: z as 8 bytes big-endian
// two's complement; decoding rejects z outside [-T, G + T], T = ceil(65 ln2 G/ε) + 1.

import { RESOLUTION, SYSTEM, InvalidSurvey, InvalidValue, ReportError, fromHex, toHex } from "./randomness.js";

function gcd(a, b) { while (b) [a, b] = [b, a % b]; return a; }

/** A positive double as an exact fraction [numerator, denominator] of BigInts. */
export function exactFraction(value) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  const high = view.getUint32(0), low = view.getUint32(4);
  const exponent = (high >>> 20) & 0x7ff;
  let mantissa = (BigInt(high & 0xfffff) << 32n) | BigInt(low);
  let power = exponent === 0 ? -1074 : exponent - 1075;
  if (exponent !== 0) mantissa |= 1n << 52n;
  if (power >= 0) return [mantissa << BigInt(power), 1n];
  const denominator = 1n << BigInt(-power);
  const divisor = gcd(mantissa, denominator);
  return [mantissa / divisor, denominator / divisor];
}

/** Bernoulli(exp(-numerator/denominator)) for a ratio in [0, 1] (CKS 2020, Algorithm 1). */
export function bernoulliExp(source, numerator, denominator) {
  let k = 1n;
  while (source.randbelowBig(denominator * k) < numerator) k += 1n;
  return k % 2n === 1n;
}

/** Z with P[Z = z] ∝ exp(-|z| s/t), for BigInts s, t >= 1 (CKS 2020, Algorithm 2). */
export function sampleDiscreteLaplace(source, s, t) {
  for (;;) {
    const u = source.randbelowBig(t);
    if (!bernoulliExp(source, u, t)) continue;
    let v = 0n;
    while (bernoulliExp(source, 1n, 1n)) v += 1n;
    const y = (u + t * v) / s;
    const negative = source.randbelowBig(2n);
    if (negative && y === 0n) continue; // otherwise 0 would be counted twice
    return Number(negative ? -y : y);
  }
}

function roundHalfEven(x) {
  const floor = Math.floor(x), rest = x - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

export class DiscreteLaplace {
  static mechanismName = "discrete_laplace";

  constructor({ epsilon, lo, hi, gridSize }) {
    if (!Number.isFinite(lo) || !Number.isFinite(hi) || !(lo < hi) || !Number.isFinite(hi - lo)) {
      throw new InvalidSurvey(`numeric range must be finite with lo < hi, got [${lo}, ${hi}]`);
    }
    if (!Number.isInteger(gridSize) || gridSize < 1 || gridSize > 1e6) {
      throw new InvalidSurvey(`grid_size must be an integer in [1, 1000000], got ${gridSize}`);
    }
    this.epsilon = epsilon;
    this.lo = lo;
    this.hi = hi;
    this.gridSize = gridSize;
    const [num, den] = exactFraction(epsilon);
    const denominator = den * BigInt(gridSize);
    const divisor = gcd(num, denominator);
    this.s = num / divisor;
    this.t = denominator / divisor;
    this.tail = Math.ceil(65 * Math.log(2) * gridSize / epsilon) + 1;
  }

  get name() { return "discrete_laplace"; }
  get reportBytes() { return 8; }
  /** Sampled exactly at scale G/ε: no probability is rounded. */
  get epsilonImplemented() { return this.epsilon; }

  checkValue(value) {
    if (typeof value !== "number" || !(value >= this.lo && value <= this.hi)) {
      throw new InvalidValue(`value must be a number in [${this.lo}, ${this.hi}], got ${value}`);
    }
    return value;
  }

  grid(value) {
    const g = this.gridSize;
    const u = Math.min(g, Math.max(0, g * ((value - this.lo) / (this.hi - this.lo))));
    const k = Math.floor(u);
    return [k, roundHalfEven((u - k) * RESOLUTION)];
  }

  randomize(value, source = SYSTEM) {
    let [k, up] = this.grid(this.checkValue(value));
    if (source.uniform53() < up) k += 1;
    return k + sampleDiscreteLaplace(source, this.s, this.t);
  }

  encode(report) {
    const view = new DataView(new ArrayBuffer(8));
    view.setBigInt64(0, BigInt(report));
    return toHex(new Uint8Array(view.buffer));
  }

  decode(text) {
    const bytes = fromHex(text, 8);
    const value = Number(new DataView(bytes.buffer).getBigInt64(0));
    if (value < -this.tail || value > this.gridSize + this.tail) {
      throw new ReportError(`discrete_laplace report outside the plausible range [${-this.tail}, ${this.gridSize + this.tail}]`);
    }
    return value;
  }
}
