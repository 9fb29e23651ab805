// A relayed survey's side of the browser client (client/sealed.py; docs/protocol.md "Sealing"):
// its signed relay member, the aggregator's encryption key, every unit sealed for the relay only.
// Imported only for a relayed survey (survey.js's loadMechanisms, after the signature), and only
// when the page pins it and sealing.js, as the mechanism modules are.

import { b64decode, b64encode, keyId, verify } from "./deniable.js";
import { InvalidSurvey, SignatureError, TransportError } from "./randomness.js";
import * as sealing from "./sealing.js";
import { exactKeys } from "./survey.js";

/** A relayed survey's `relay` member (shared/survey.py Relay), signed form: all three members. */
export function parseRelay(data, where = "survey.relay") {
  const fail = (member, message) => new InvalidSurvey(`${where}.${member}: ${message}`, "relay");
  exactKeys(where, data, ["url", "min_batch", "shuffle_unit"]);
  const { url, min_batch: minBatch, shuffle_unit: shuffleUnit } = data;
  const match = typeof url === "string" && url.length <= 200 && !/[\0-\x1f\x7f-\x9f?#@ \\]/.test(url) && !url.endsWith("/") && /^(https?):\/\/([^/]+)/.exec(url);
  const host = match && (match[2].endsWith("]") ? match[2] : match[2].replace(/:[^:]*$/, ""));
  if (!match) throw fail("url", "must be https://host[:port][/path] without a trailing slash, query, fragment or credentials");
  if (match[1] === "http" && !["localhost", "127.0.0.1", "[::1]"].includes(host)) throw fail("url", "must use https (http only for a loopback host)");
  if (!Number.isInteger(minBatch) || minBatch < 1 || minBatch > 1e7) throw fail("min_batch", "must be an integer in [1, 10000000]");
  if (!["question", "submission"].includes(shuffleUnit)) throw fail("shuffle_unit", "must be question or submission");
  return Object.freeze({ url, minBatch, shuffleUnit });
}

/**
 * The aggregator's encryption key {key, keyId, pin}, verified under the pinned signing key, which
 * `rotate(pin)` follows along the aggregator's chain when the key document names another.
 */
export async function encryptionKey(client, pin, rotate) {
  const response = await client.request("GET", "/api/v1/key");
  if (response.status !== 200) throw new TransportError(`aggregator answered ${response.status} to GET key`, response.status);
  const document = await response.json().catch(() => { throw new SignatureError("the key document is not JSON"); });
  if (document?.public_key !== b64encode(pin.key)) pin = await rotate(pin);
  const key = await sealing.verifiedEncryptionKey(document, pin.key, { verify, b64decode, b64encode, keyId, SignatureError });
  return { key, keyId: document.encryption_key.key_id, pin };
}

const b64url = (bytes) => b64encode(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** The relay's body: format, key id, units, and the enrolment token if any (members in this order). */
export const relayBody = (keyIdValue, units, token) => JSON.stringify({ format: sealing.FORMAT, key_id: keyIdValue, units, ...(token !== undefined && { enrolment_token: token }) });

/** Every unit of a relayed survey sealed to its verified encryption key, as the relay's body. */
export async function sealedBody(survey, reports, token) {
  if (!survey.encryption) throw new SignatureError(`survey ${survey.id} is relayed but no encryption key was verified; fetch it again`);
  const { units } = resealData(survey, reports);
  return relayBody(survey.encryption.keyId, await sealUnits(survey.id, units, survey.encryption.key, reports), token);
}

/** What the outbox keeps to reseal a relayed batch (`resealedBody`): its units and sizes, the wire reports. */
export function resealData(survey, reports) {
  const units = (survey.relay.shuffleUnit === "submission" ? [""] : survey.questions.map((q) => q.id)).map((unit) => ({ unit, size: sealing.unitSize(survey, unit) }));
  return { units, reports };
}

async function sealUnits(surveyId, units, key, reports) {
  return Promise.all(units.map(async ({ unit, size }) => {
    const chosen = unit ? reports.filter((r) => r.question === unit) : reports;
    const sealed = await sealing.seal(key, { surveyId, unit, plaintext: sealing.unitBody(chosen, unit), size });
    return { unit, sealed: b64url(sealed) };
  }));
}

/**
 * A queued relay body with the SAME randomized reports sealed again to `encryption` (a newer key
 * from `encryptionKey`), the enrolment token kept. Why the same: their noise is already charged.
 */
export async function resealedBody(body, surveyId, reseal, encryption) {
  const token = JSON.parse(body).enrolment_token;
  return relayBody(encryption.keyId, await sealUnits(surveyId, reseal.units, encryption.key, reseal.reports), token);
}
