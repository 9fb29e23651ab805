// A relayed survey's side of the browser client (client/sealed.py; docs/protocol.md "Sealing"):
// its signed relay member, the aggregator's encryption key, every unit sealed for the relay only.
// Imported only for a relayed survey (survey.js's loadMechanisms, after the signature), and only
// when the page pins it and sealing.js, as the mechanism modules are.

import { InvalidSurvey, SignatureError } from "./randomness.js";
import * as sealing from "./sealing.js";
import { b64decode, b64encode, keyDocument, keyId, verify } from "./signatures.js";
import { exactKeys } from "./survey.js";

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);
const SEGMENT = /^(?:[A-Za-z0-9._~!$&'()*+,;=:-]|%[0-9A-Fa-f]{2})+$/;
const DEFAULT_PORTS = { http: "80", https: "443" };

/**
 * An http(s) URL {scheme, host, port, path, origin, loopback} (origin serialized per RFC 6454, as
 * Origin and CSP name it), or null: exactly what shared/origins.py's parse_url accepts (the
 * `relay_urls` vectors). A DNS name of ASCII labels (not ending in a number), a dotted-quad IPv4
 * address or an IPv6 address in brackets (no zone); no user information, query, fragment, trailing
 * slash, empty or dot segment.
 */
export function parseUrl(text) {
  if (typeof text !== "string" || !/^[\x21-\x7e]+$/.test(text) || text.includes("\\")) return null;
  const [, scheme, authority, path = ""] = /^(https?):\/\/([^/?#]*)(\/[^?#]*)?$/i.exec(text) ?? [];
  const [, named, port = ""] =
    (scheme && /^(\[[^\]]*\]|[^:[\]]*)(?::([0-9]{1,5}))?$/.exec(authority)) || [];
  if (named === undefined || +port > 65535 || (port && +port === 0)) return null;
  let host = named.toLowerCase();
  const labels = host.split(".");
  if (host.startsWith("[")) {
    // the WHATWG URL parser reads and compresses IPv6 (RFC 5952) as Python does
    try {
      host = host.includes("%") ? null : new URL(`http://${host}/`).hostname;
    } catch {
      host = null;
    }
  } else if (/^[0-9.]+$/.test(host) || /^(?:[0-9]+|0x[0-9a-f]*)$/.test(labels.at(-1)))
    host = IPV4.test(host) ? host : null;
  else if (host.length > 253 || !labels.every((label) => LABEL.test(label))) host = null;
  if (
    !host ||
    (path &&
      !path
        .slice(1)
        .split("/")
        .every((s) => SEGMENT.test(s) && s !== "." && s !== ".."))
  )
    return null;
  const lower = scheme.toLowerCase(),
    kept = port && String(+port) !== DEFAULT_PORTS[lower] ? `:${+port}` : "";
  const loopback =
    host === "localhost" || host === "[::1]" || (IPV4.test(host) && host.startsWith("127."));
  return {
    scheme: lower,
    host,
    port: kept ? +port : null,
    path,
    origin: `${lower}://${host}${kept}`,
    loopback,
  };
}

/** A relayed survey's `relay` member (shared/survey_relay.py Relay), signed form: url,
 * min_batch, shuffle_unit, and the relay noise if any (§11.7). */
export function parseRelay(data, where = "survey.relay") {
  const fail = (member, message) => new InvalidSurvey(`${where}.${member}: ${message}`, "relay");
  exactKeys(where, data, ["url", "min_batch", "shuffle_unit", "noise?"]);
  const { url, min_batch: minBatch, shuffle_unit: shuffleUnit } = data;
  const parsed = typeof url === "string" && url.length <= 200 ? parseUrl(url) : null;
  if (!parsed)
    throw fail(
      "url",
      "must be https://host[:port][/path] without a trailing slash, query, fragment or credentials",
    );
  if (parsed.scheme === "http" && !parsed.loopback)
    throw fail("url", "must use https (http only for a loopback host)");
  if (!Number.isInteger(minBatch) || minBatch < 1 || minBatch > 1e6)
    throw fail("min_batch", "must be an integer in [1, 1000000]");
  if (!["question", "submission"].includes(shuffleUnit))
    throw fail("shuffle_unit", "must be question or submission");
  let noise = null;
  if (data.noise !== undefined) {
    if (shuffleUnit !== "question")
      throw fail(
        "noise",
        "relay noise needs shuffle_unit 'question': a whole submission is not one output value",
      );
    noise = parseNoise(data.noise, `${where}.noise`);
  }
  return Object.freeze({ url, origin: parsed.origin, minBatch, shuffleUnit, noise });
}

// deniable.survey_relay.MAX_NOISE_DELTA; deniable.dummies.MAX_TRIALS, MAX_TOP, the ratios' denominators.
const MAX_NOISE_DELTA = 1e-3,
  MAX_TRIALS = 2 ** 14,
  MAX_TOP = 2 ** 11,
  MAX_DENOMINATOR = 2 ** 20;

/**
 * The relay noise a survey signs (shared/survey_relay.py RelayNoise, deniable.dummies
 * law_from_dict): its structure only, as a device needs it; the relay and the aggregator
 * check the law's exact delta. The ratios in their signed (reduced "a/b") spelling.
 */
function parseNoise(data, where) {
  const fail = (member, message) => new InvalidSurvey(`${where}${member}: ${message}`, "relay");
  exactKeys(where, data, ["epsilon", "delta", "law"]);
  const { epsilon, delta, law } = data;
  if (typeof epsilon !== "number" || !(epsilon > 0 && epsilon <= 20))
    throw fail(".epsilon", "must be a number in (0, 20]");
  if (typeof delta !== "number" || !(delta > 0 && delta <= MAX_NOISE_DELTA))
    throw fail(
      ".delta",
      `must be in (0, ${MAX_NOISE_DELTA}]: with dummies that are never negative no law gives ` +
        "delta = 0 for substitution neighbours",
    );
  const integer = (member, value, low, high) => {
    if (!Number.isInteger(value) || value < low || value > high)
      throw fail(`.law.${member}`, `must be an integer in [${low}, ${high}]`);
    return value;
  };
  const ratio = (member, value) => {
    const match = typeof value === "string" && /^([1-9][0-9]*)\/([1-9][0-9]*)$/.exec(value);
    const [a, b] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
    const gcd = (x, y) => (y ? gcd(y, x % y) : x);
    if (!match || a >= b || b > MAX_DENOMINATOR || gcd(a, b) !== 1)
      throw fail(`.law.${member}`, "must be a reduced fraction a/b in (0, 1) with b <= 2^20");
    return value;
  };
  let parsed;
  if (law?.distribution === "binomial") {
    exactKeys(`${where}.law`, law, ["distribution", "trials"]);
    parsed = { distribution: "binomial", trials: integer("trials", law.trials, 1, MAX_TRIALS) };
  } else if (law?.distribution === "geometric") {
    exactKeys(`${where}.law`, law, ["distribution", "shift", "top", "lower_ratio", "upper_ratio"]);
    const top = integer("top", law.top, 0, MAX_TOP);
    parsed = {
      distribution: "geometric",
      shift: integer("shift", law.shift, 0, top),
      top,
      lowerRatio: ratio("lower_ratio", law.lower_ratio),
      upperRatio: ratio("upper_ratio", law.upper_ratio),
    };
  } else {
    throw fail(".law.distribution", "must be one of binomial, geometric");
  }
  return Object.freeze({ epsilon, delta, law: Object.freeze(parsed) });
}

/**
 * The aggregator's encryption key {key, keyId, pin}, verified under the pinned signing key, which
 * `rotate(pin)` follows along the aggregator's chain when the key document names another.
 */
export async function encryptionKey(client, pin, rotate) {
  const document = await keyDocument(client); // strict: a member twice is refused (duplicate-member)
  if (document?.public_key !== b64encode(pin.key)) pin = await rotate(pin);
  const key = await sealing.verifiedEncryptionKey(document, pin.key, {
    verify,
    b64decode,
    b64encode,
    keyId,
    SignatureError,
  });
  return { key, keyId: document.encryption_key.key_id, pin };
}

const b64url = (bytes) =>
  b64encode(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** The relay's body: format, key id, units, and the enrolment token if any (members in this order). */
export const relayBody = (keyIdValue, units, token) =>
  JSON.stringify({
    format: sealing.FORMAT,
    key_id: keyIdValue,
    units,
    ...(token !== undefined && { enrolment_token: token }),
  });

/** Every unit of a relayed survey sealed to its verified encryption key, as the relay's body. */
export async function sealedBody(survey, reports, token) {
  if (!survey.encryption)
    throw new SignatureError(
      `survey ${survey.id} is relayed but no encryption key was verified; fetch it again`,
    );
  const { units } = resealData(survey, reports);
  return relayBody(
    survey.encryption.keyId,
    await sealUnits(survey.id, units, survey.encryption.key, reports),
    token,
  );
}

/** What the outbox keeps to reseal a relayed batch (`resealedBody`): its units and sizes, the wire reports. */
export function resealData(survey, reports) {
  const units = (
    survey.relay.shuffleUnit === "submission" ? [""] : survey.questions.map((q) => q.id)
  ).map((unit) => ({ unit, size: sealing.unitSize(survey, unit) }));
  return { units, reports };
}

async function sealUnits(surveyId, units, key, reports) {
  return Promise.all(
    units.map(async ({ unit, size }) => {
      const chosen = unit ? reports.filter((r) => r.question === unit) : reports;
      const sealed = await sealing.seal(key, {
        surveyId,
        unit,
        plaintext: sealing.unitBody(chosen, unit),
        size,
      });
      return { unit, sealed: b64url(sealed) };
    }),
  );
}

/**
 * A queued relay body with the SAME randomized reports sealed again to `encryption` (a newer key
 * from `encryptionKey`), the enrolment token kept. Why the same: their noise is already charged.
 */
export async function resealedBody(body, surveyId, reseal, encryption) {
  const token = JSON.parse(body).enrolment_token;
  return relayBody(
    encryption.keyId,
    await sealUnits(surveyId, reseal.units, encryption.key, reseal.reports),
    token,
  );
}
