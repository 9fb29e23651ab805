// Byte streams and errors (shared/randomness.py, errors.py; protocol §3): fixed bytes, same report in any language.

export const RESOLUTION_BITS = 53,
  RESOLUTION = 2 ** 53;

export class ByteStreamSource {
  constructor(bytes = new Uint8Array(0)) {
    this.bytes = bytes;
    this.position = 0;
  }
  refill() {
    throw new RangeError("byte stream exhausted");
  }
  tokenBytes(count) {
    if (this.position + count > this.bytes.length) this.refill(count);
    return this.bytes.subarray(this.position, (this.position += count));
  }

  /** Uniform in [0, 2^53): 7 bytes little-endian, >> 3. */
  uniform53() {
    const b = this.tokenBytes(7);
    return (
      ((b[0] | (b[1] << 8) | (b[2] << 16)) >>> 3) +
      ((b[3] | (b[4] << 8) | (b[5] << 16) | (b[6] << 24)) >>> 0) * 2 ** 21
    );
  }

  /** Uniform in [0, upper), 1 <= upper <= 2^32: masked rejection sampling. */
  randbelow(upper) {
    if (!Number.isInteger(upper) || upper < 1 || upper > 2 ** 32)
      throw new RangeError(`randbelow(${upper})`);
    if (upper === 1) return 0; // reads nothing
    const bits = 32 - Math.clz32(upper - 1);
    for (;;) {
      const b = this.tokenBytes((bits + 7) >> 3);
      let candidate = 0;
      for (let i = b.length - 1; i >= 0; i--) candidate = candidate * 256 + b[i];
      if ((candidate %= 2 ** bits) < upper) return candidate;
    }
  }
}

export class ArraySource extends ByteStreamSource {}

/** The CSPRNG: crypto.getRandomValues, 4 KiB at a time. */
export class SystemRandomSource extends ByteStreamSource {
  refill(count) {
    this.bytes = crypto.getRandomValues(new Uint8Array(Math.max(4096, count)));
    this.position = 0;
  }
}

export const SYSTEM = new SystemRandomSource();

export class DeniableError extends Error {
  get name() {
    return this.constructor.name;
  }
}
/** `reason`: a machine-readable code, the same as Python's (docs/protocol.md §7, "Reason codes"). */
export class InvalidSurvey extends DeniableError {
  constructor(message, reason = "invalid") {
    super(message);
    this.reason = reason;
  }
}
export class InvalidValue extends DeniableError {}
export class ReportError extends DeniableError {}
export class SignatureError extends DeniableError {
  constructor(message, reason = "invalid") {
    super(message);
    this.reason = reason;
  }
}
export class PolicyViolation extends DeniableError {}
export class BudgetExceeded extends DeniableError {}
export class AlreadyAnswered extends DeniableError {}
export class TransportError extends DeniableError {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}
export class SealingError extends DeniableError {}
