// Memoized randomized response for questions asked again and again: shared/mechanisms/longitudinal.py
// and client/memo.py, docs/protocol.md §5.4. Erlingsson, Pihur, Korolova, "RAPPOR" (CCS 2014) §3.

import { GRR } from "./grr.js";
import { canonicalBytes } from "./jcs.js";
import { ArraySource, InvalidSurvey, SYSTEM } from "./mechanism.js";
import { TOLERANCE, epsilon, exactKeys, identifier } from "./survey.js";

const encode = (text) => new TextEncoder().encode(text);
const concat = (...parts) => Uint8Array.from(parts.flatMap((part) => [...part]));
// Why every signed parameter: two surveys with one key and ε but other thresholds would
// otherwise compare one memoized uniform with two thresholds, and together reveal more than ε.
const memoInfo = (q) =>
  canonicalBytes([
    q.longitudinal.key,
    q.labels,
    q.epsilon,
    q.longitudinal.instantaneous_epsilon,
    q.mechanism,
    q.parameters,
  ]);

async function hmac(key, message) {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, message));
}

/** A permanent GRR (keep) once per value, remembered, then a fresh instantaneous GRR per report. */
export class LongitudinalGRR extends GRR {
  /** `longitudinal`: a question's {key, instantaneous_epsilon}, checked here (loaded only for such questions). */
  constructor({ domainSize, keep, instantaneousKeep, longitudinal: l }) {
    super({ domainSize, keep });
    this.permanent = new GRR({ domainSize, keep });
    this.instantaneous = new GRR({ domainSize, keep: instantaneousKeep });
    if (l === undefined) return;
    exactKeys("longitudinal", l, ["key", "instantaneous_epsilon"]);
    identifier("longitudinal.key", l.key);
    epsilon("longitudinal.instantaneous_epsilon", l.instantaneous_epsilon);
    if (this.instantaneous.epsilonImplemented > l.instantaneous_epsilon + TOLERANCE)
      throw new InvalidSurvey(
        "its instantaneous_keep implies more than instantaneous_epsilon",
        "implied-epsilon",
      );
  }

  permanentResponse(value, source = SYSTEM) {
    return this.permanent.randomize(value, source);
  }

  /** Without a memoized permanent response, both layers draw from `source`, permanent first. */
  randomize(value, source = SYSTEM, permanent = this.permanentResponse(value, source)) {
    this.checkValue(value);
    return this.instantaneous.randomize(permanent, source);
  }

  /**
   * The memo family of question q: its tag (base64), an opaque name for everything that shapes
   * the permanent response but the value (key, labels, both ε, mechanism, signed parameters).
   */
  async family(secret, q) {
    return btoa(
      String.fromCharCode(
        ...(await hmac(await hmac(secret, encode("deniable.client.memo/family/2")), memoInfo(q))),
      ),
    );
  }

  /**
   * Question q's permanent response to `value`, drawn from HMAC-SHA256 in counter mode under the
   * device secret (the same every time): the family's info, then the value, bound into the stream.
   */
  async permanentFor(secret, q, value) {
    const info = concat(memoInfo(q), canonicalBytes([value]));
    const subkey = await hmac(secret, encode("deniable.client.memo/permanent/2"));
    for (let blocks = 4; ; blocks *= 2) {
      const stream = [];
      for (let counter = 0n; counter < blocks; counter++) {
        const c = new Uint8Array(8);
        new DataView(c.buffer).setBigUint64(0, counter);
        stream.push(await hmac(subkey, concat(info, c)));
      }
      try {
        return this.permanentResponse(value, new ArraySource(concat(...stream)));
      } catch (error) {
        if (!(error instanceof RangeError)) throw error; // the stream ran out: more blocks, same prefix
      }
    }
  }
}
