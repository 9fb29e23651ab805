// Randomness, the wire's fields, the shared checks and the errors: mirrors shared/randomness.py,
// wire.py, mechanisms/base.py and errors.py (docs/protocol.md §3). Every draw derives from bytes, so
// a fixed stream gives the same report in every language; real reports use crypto.getRandomValues.

export const RESOLUTION_BITS = 53, RESOLUTION = 2 ** 53;

/** A byte stream: a buffer read in order, refilled by refill(); every draw derives from tokenBytes. */
export class ByteStreamSource {
  constructor(bytes = new Uint8Array(0)) { this.bytes = bytes; this.position = 0; }
  refill() { throw new RangeError("byte stream exhausted"); }
  tokenBytes(count) {
    if (this.position + count > this.bytes.length) this.refill(count);
    return this.bytes.subarray(this.position, (this.position += count));
  }

  /** Uniform in [0, 2^53): 7 bytes little-endian, >> 3. */
  uniform53() {
    const b = this.tokenBytes(7);
    return ((b[0] | (b[1] << 8) | (b[2] << 16)) >>> 3) + ((b[3] | (b[4] << 8) | (b[5] << 16) | (b[6] << 24)) >>> 0) * 2 ** 21;
  }

  /** Uniform in [0, 2^53): 8 bytes little-endian, >> 11 (unary encodings). */
  uniform53Wide() {
    const b = this.tokenBytes(8);
    return ((b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)) >>> 11) + ((b[4] | (b[5] << 8) | (b[6] << 16) | (b[7] << 24)) >>> 0) * 2 ** 21;
  }

  /** Uniform in [0, upper), 1 <= upper <= 2^32, by masked rejection sampling. */
  randbelow(upper) {
    if (!Number.isInteger(upper) || upper < 1 || upper > 2 ** 32) throw new RangeError(`randbelow(${upper})`);
    if (upper === 1) return 0; // reads nothing
    const bits = 32 - Math.clz32(upper - 1);
    for (;;) {
      const b = this.tokenBytes((bits + 7) >> 3);
      let candidate = 0;
      for (let i = b.length - 1; i >= 0; i--) candidate = candidate * 256 + b[i];
      if ((candidate %= 2 ** bits) < upper) return candidate;
    }
  }

  /** randbelow for a BigInt bound of any size (the discrete Laplace sampler). */
  randbelowBig(upper) {
    if (upper < 1n) throw new RangeError(`randbelow(${upper})`);
    if (upper === 1n) return 0n;
    const bits = (upper - 1n).toString(2).length, mask = (1n << BigInt(bits)) - 1n;
    for (;;) {
      const candidate = this.tokenBytes((bits + 7) >> 3).reduceRight((n, byte) => (n << 8n) | BigInt(byte), 0n) & mask;
      if (candidate < upper) return candidate;
    }
  }
}

/** A fixed byte stream (test vectors, memoized responses): RangeError when exhausted. */
export class ArraySource extends ByteStreamSource {}

/** The CSPRNG: crypto.getRandomValues, 4 KiB at a time. */
export class SystemRandomSource extends ByteStreamSource {
  refill(count) { this.bytes = crypto.getRandomValues(new Uint8Array(Math.max(4096, count))); this.position = 0; }
}

export const SYSTEM = new SystemRandomSource();

/** A threshold out of 2^53 from a float probability, as shared/randomness.py's threshold(). */
export const threshold = (p) => Math.min(Math.max(Math.floor(p * RESOLUTION), 1), RESOLUTION - 1);

/** log(a / b) for positive integers (Numbers or BigInts), accurate near 1. */
export const logRatio = (a, b) => Math.log1p(Number(BigInt(a) - BigInt(b)) / Number(b));

/** The ε of keeping the truth when uniform53() < keep, against odds a : b (GRR: d - 1 : 1). */
export const keepEpsilon = (keep, a = 1, b = 1) => logRatio(BigInt(keep) * BigInt(a), BigInt(RESOLUTION - keep) * BigInt(b));

/** Bytes for every integer in [0, upper): max(1, ceil(bitlength(upper - 1) / 8)). */
export const widthBytes = (upper) => Math.ceil((upper - 1).toString(2).length / 8);

export function toHex(bytes) {
  let hex = "";
  for (const b of bytes) hex += (b < 16 ? "0" : "") + b.toString(16);
  return hex;
}

/** `length` bytes from exactly 2 * length lowercase hex digits, or ReportError. */
export function fromHex(text, length) {
  if (typeof text !== "string" || text.length !== 2 * length || /[^0-9a-f]/.test(text)) throw new ReportError(`report must be ${2 * length} lowercase hex digits`);
  return Uint8Array.from({ length }, (_, i) => parseInt(text.substr(2 * i, 2), 16));
}

/** An integer in [lo, hi] (a structural parameter or a threshold), or InvalidSurvey. */
export function checkInteger(name, value, lo, hi) {
  if (!Number.isInteger(value) || value < lo || value > hi) throw new InvalidSurvey(`${name} must be an integer in [${lo}, ${hi}], got ${value}`);
  return value;
}

export const checkThreshold = (name, value) => checkInteger(name, value, 1, RESOLUTION - 1);

/** A finite numeric range with lo < hi, or InvalidSurvey. */
export function checkRange(lo, hi) {
  if (![lo, hi, hi - lo].every(Number.isFinite) || !(lo < hi)) throw new InvalidSurvey(`numeric range must be finite with lo < hi, got [${lo}, ${hi}]`);
}

/** A number in [lo, hi], or InvalidValue: never clamped. */
export function checkNumber(value, lo, hi) {
  if (typeof value !== "number" || !(value >= lo && value <= hi)) throw new InvalidValue(`value must be a number in [${lo}, ${hi}], got ${value}`);
  return value;
}

/**
 * What the mechanisms share: a category check and the wire, unsigned big-endian `fields`
 * [[bytes, exclusive upper bound], ...] to which toFields/fromFields map a report.
 */
export class Mechanism {
  get name() { return this.constructor.mechanismName; }
  get reportBytes() { return this.fields.reduce((n, [width]) => n + width, 0); }
  checkValue(value) {
    if (!Number.isInteger(value) || value < 0 || value >= this.domainSize) throw new InvalidValue(`value must be an integer in [0, ${this.domainSize}), got ${value}`);
    return value;
  }
  toFields(report) { return report; }
  fromFields(values) { return values; }
  encode(report) {
    const values = this.toFields(report);
    let hex = "";
    for (let i = 0; i < values.length; i++) hex += values[i].toString(16).padStart(2 * this.fields[i][0], "0");
    return hex;
  }
  decode(text) {
    fromHex(text, this.reportBytes);
    let at = 0;
    return this.fromFields(this.fields.map(([width, upper]) => {
      const value = parseInt(text.slice(at, (at += 2 * width)), 16);
      if (value >= upper) throw new ReportError(`${this.name} report: a field outside [0, ${upper})`);
      return value;
    }));
  }
}

/** Errors, one root (mirrors deniable.errors). */
export class DeniableError extends Error { get name() { return this.constructor.name; } }
export class InvalidSurvey extends DeniableError {}
export class InvalidValue extends DeniableError {}
export class ReportError extends DeniableError {}
export class SignatureError extends DeniableError {}
export class PolicyViolation extends DeniableError {}
export class BudgetExceeded extends DeniableError {}
export class AlreadyAnswered extends DeniableError {}
export class TransportError extends DeniableError { constructor(message, status) { super(message); this.status = status; } }
