// Randomness for real reports, and the byte streams the test vectors replay.
// Mirrors shared/randomness.py: every draw is derived from bytes, so a fixed
// byte stream gives the same report in every language (docs/protocol.md §3).
// Real reports draw only from crypto.getRandomValues (never a non-cryptographic generator), 4 KiB at a time.

export const RESOLUTION_BITS = 53;
export const RESOLUTION = 2 ** 53;
const BLOCK_BYTES = 4096;

/** A source of uniform bytes; every other draw is derived from tokenBytes. */
export class ByteStreamSource {
  tokenBytes(count) { throw new Error("tokenBytes is abstract"); }

  /** Uniform in [0, 2^53): 7 bytes little-endian, shifted right by 3. */
  uniform53() {
    const b = this.tokenBytes(7);
    const low = b[0] | (b[1] << 8) | (b[2] << 16);
    const high = (b[3] | (b[4] << 8) | (b[5] << 16) | (b[6] << 24)) >>> 0;
    return (low >>> 3) + high * 2 ** 21;
  }

  /** Uniform in [0, 2^53): 8 bytes little-endian, shifted right by 11 (unary encodings). */
  uniform53Wide() {
    const b = this.tokenBytes(8);
    const low = (b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)) >>> 0;
    const high = (b[4] | (b[5] << 8) | (b[6] << 16) | (b[7] << 24)) >>> 0;
    return (low >>> 11) + high * 2 ** 21;
  }

  /** Uniform in [0, upper) for 1 <= upper <= 2^32, by masked rejection sampling. */
  randbelow(upper) {
    if (!Number.isInteger(upper) || upper < 1 || upper > 2 ** 32) throw new RangeError(`randbelow(${upper})`);
    if (upper === 1) return 0; // consumes nothing
    const bits = 32 - Math.clz32(upper - 1);
    const size = (bits + 7) >> 3;
    const mask = 2 ** bits;
    for (;;) {
      const b = this.tokenBytes(size);
      let candidate = 0;
      for (let i = size - 1; i >= 0; i--) candidate = candidate * 256 + b[i];
      candidate %= mask; // the low `bits` bits
      if (candidate < upper) return candidate;
    }
  }

  /** randbelow for a BigInt bound of any size (the discrete Laplace sampler). */
  randbelowBig(upper) {
    if (upper < 1n) throw new RangeError(`randbelow(${upper})`);
    if (upper === 1n) return 0n;
    const bits = (upper - 1n).toString(2).length;
    const size = (bits + 7) >> 3;
    const mask = (1n << BigInt(bits)) - 1n;
    for (;;) {
      const b = this.tokenBytes(size);
      let candidate = 0n;
      for (let i = size - 1; i >= 0; i--) candidate = (candidate << 8n) | BigInt(b[i]);
      candidate &= mask;
      if (candidate < upper) return candidate;
    }
  }
}

/** The CSPRNG: crypto.getRandomValues, buffered. */
export class SystemRandomSource extends ByteStreamSource {
  constructor() { super(); this.buffer = new Uint8Array(0); this.position = 0; }
  tokenBytes(count) {
    if (this.position + count > this.buffer.length) {
      this.buffer = new Uint8Array(Math.max(BLOCK_BYTES, count));
      globalThis.crypto.getRandomValues(this.buffer);
      this.position = 0;
    }
    const out = this.buffer.subarray(this.position, this.position + count);
    this.position += count;
    return out;
  }
}

/** A fixed byte stream (test vectors only): throws when exhausted. */
export class ArraySource extends ByteStreamSource {
  constructor(bytes) { super(); this.bytes = bytes; this.position = 0; }
  tokenBytes(count) {
    if (this.position + count > this.bytes.length) throw new RangeError("byte stream exhausted");
    const out = this.bytes.subarray(this.position, this.position + count);
    this.position += count;
    return out;
  }
}

export const SYSTEM = new SystemRandomSource();

/** A threshold out of 2^53 from a float probability, as shared/randomness.py's threshold(). */
export function threshold(probability) {
  return Math.min(Math.max(Math.floor(probability * RESOLUTION), 1), RESOLUTION - 1);
}

/** log(a / b) for positive integers, accurate near 1 (a, b Numbers or BigInts). */
export function logRatio(a, b) {
  const A = BigInt(a), B = BigInt(b);
  return Math.log1p(Number(A - B) / Number(B));
}

/** Hex helpers shared by the wire encoders. */
export function toHex(bytes) {
  let text = "";
  for (const b of bytes) text += (b < 16 ? "0" : "") + b.toString(16);
  return text;
}

export function fromHex(text, length) {
  if (typeof text !== "string" || text.length !== 2 * length || !/^(?:[0-9a-f]{2})*$/.test(text)) {
    throw new ReportError(`report must be ${2 * length} lowercase hex characters`);
  }
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
  return out;
}

/** Bytes for every integer in [0, upper): max(1, ceil(bitlength(upper - 1) / 8)). */
export function widthBytes(upper) {
  let bits = 0;
  for (let v = upper - 1; v > 0; v = Math.floor(v / 2)) bits++;
  return Math.max(1, Math.ceil(bits / 8));
}

export function packUint(value, width, out = new Uint8Array(width), offset = 0) {
  for (let i = width - 1; i >= 0; i--) { out[offset + i] = value % 256; value = Math.floor(value / 256); }
  return out;
}

export function unpackUint(bytes, offset, width) {
  let value = 0;
  for (let i = 0; i < width; i++) value = value * 256 + bytes[offset + i];
  return value;
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
export class TransportError extends DeniableError {
  constructor(message, status) { super(message); this.status = status; }
}

export function checkCategory(value, domainSize) {
  if (!Number.isInteger(value) || value < 0 || value >= domainSize) {
    throw new InvalidValue(`value must be an integer in [0, ${domainSize}), got ${value}`);
  }
  return value;
}

export function checkThreshold(name, value) {
  if (!Number.isSafeInteger(value) || value < 1 || value >= RESOLUTION) {
    throw new InvalidSurvey(`${name} must be an integer threshold in [1, 2^53), got ${value}`);
  }
  return value;
}
