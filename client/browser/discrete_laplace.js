// The Laplace mechanism on an integer grid, sampled exactly: shared/mechanisms/discrete_laplace.py,
// docs/protocol.md §4. Dwork, McSherry, Nissim, Smith (TCC 2006); Mironov (CCS 2012) for why not
// floats; Canonne, Kamath, Steinke (NeurIPS 2020) Algorithms 1 and 2, in BigInt arithmetic.

import {
  Mechanism,
  RESOLUTION,
  ReportError,
  SYSTEM,
  checkInteger,
  checkNumber,
  checkRange,
} from "./mechanism.js";

const gcd = (a, b) => (b ? gcd(b, a % b) : a);

/** randbelow for a BigInt bound of any size: the same masked rejection sampling, little-endian. */
export function randbelowBig(source, upper) {
  if (upper < 1n) throw new RangeError(`randbelow(${upper})`);
  if (upper === 1n) return 0n;
  const bits = (upper - 1n).toString(2).length,
    mask = (1n << BigInt(bits)) - 1n;
  for (;;) {
    const candidate =
      source.tokenBytes((bits + 7) >> 3).reduceRight((n, byte) => (n << 8n) | BigInt(byte), 0n) &
      mask;
    if (candidate < upper) return candidate;
  }
}

/** A positive double as an exact reduced fraction [numerator, denominator] of BigInts. */
export function exactFraction(value) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  const bits = view.getBigUint64(0),
    exponent = Number(bits >> 52n);
  const mantissa = (bits & ((1n << 52n) - 1n)) | (exponent ? 1n << 52n : 0n);
  const power = BigInt(exponent ? exponent - 1075 : -1074);
  if (power >= 0n) return [mantissa << power, 1n];
  const divisor = gcd(mantissa, 1n << -power);
  return [mantissa / divisor, (1n << -power) / divisor];
}

/** Bernoulli(exp(-numerator/denominator)) for a ratio in [0, 1] (CKS 2020, Algorithm 1). */
export function bernoulliExp(source, numerator, denominator) {
  let k = 1n;
  while (randbelowBig(source, denominator * k) < numerator) k++;
  return k % 2n === 1n;
}

/** Z with P[Z = z] ∝ exp(-|z| s/t), for BigInts s, t >= 1 (CKS 2020, Algorithm 2). */
export function sampleDiscreteLaplace(source, s, t) {
  for (;;) {
    const u = randbelowBig(source, t);
    if (!bernoulliExp(source, u, t)) continue;
    let v = 0n;
    while (bernoulliExp(source, 1n, 1n)) v++;
    const y = (u + t * v) / s;
    const negative = randbelowBig(source, 2n);
    if (negative && !y) continue; // otherwise 0 would be counted twice
    return Number(negative ? -y : y);
  }
}

export class DiscreteLaplace extends Mechanism {
  static mechanismName = "discrete_laplace";

  constructor({ epsilon, lo, hi, gridSize }) {
    super();
    checkRange(lo, hi);
    Object.assign(this, { epsilon, lo, hi, gridSize: checkInteger("grid_size", gridSize, 1, 1e6) });
    const [num, den] = exactFraction(epsilon),
      denominator = den * BigInt(gridSize),
      divisor = gcd(num, denominator);
    this.s = num / divisor;
    this.t = denominator / divisor;
    this.tail = Math.ceil((65 * Math.log(2) * gridSize) / epsilon) + 1; // reports beyond: probability < 2^-64
  }

  get reportBytes() {
    return 8;
  }
  /** Sampled exactly at scale G/ε: no probability is rounded. */
  get epsilonImplemented() {
    return this.epsilon;
  }

  checkValue(value) {
    return checkNumber(value, this.lo, this.hi);
  }

  randomize(value, source = SYSTEM) {
    const g = this.gridSize,
      u = Math.min(g, Math.max(0, g * ((this.checkValue(value) - this.lo) / (this.hi - this.lo))));
    let k = Math.floor(u);
    // Up with probability u - k, as the threshold round-half-to-even((u - k) * 2^53).
    const scaled = (u - k) * RESOLUTION,
      floor = Math.floor(scaled),
      rest = scaled - floor;
    if (source.uniform53() < (rest > 0.5 || (rest === 0.5 && floor % 2) ? floor + 1 : floor)) k++;
    return k + sampleDiscreteLaplace(source, this.s, this.t);
  }

  /** The grid point z, back on the question's scale. */
  describe(z) {
    return `${+(this.lo + (z * (this.hi - this.lo)) / this.gridSize).toPrecision(6)}`;
  }
  words(z, say) {
    return say.number(Number(this.describe(z)));
  }

  /** z as 8 bytes big-endian two's complement. */
  encode(report) {
    return BigInt.asUintN(64, BigInt(report)).toString(16).padStart(16, "0");
  }

  fromBytes(bytes) {
    const value = Number(
      BigInt.asIntN(
        64,
        bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n),
      ),
    );
    if (value < -this.tail || value > this.gridSize + this.tail)
      throw new ReportError(
        `discrete_laplace report outside [${-this.tail}, ${this.gridSize + this.tail}]`,
      );
    return value;
  }
}
