// Signatures and the signed documents they cover (docs/protocol.md §2, §7; shared/keychain.py):
// canonical base64, key ids, Ed25519 verification, a survey document verified under the pinned key,
// and the aggregator's key document. deniable.js (fetchSurvey), keychain.js (rotation) and sealed.js
// (the encryption key) verify through these; deniable.js exports them.

import { canonicalBytes, parseJson } from "./jcs.js";
import { InvalidSurvey, SignatureError, TransportError } from "./randomness.js";
import { loadMechanisms, parseDefinition } from "./survey.js";

export const b64encode = (bytes) => btoa(String.fromCharCode(...bytes));

/** Canonical base64 (re-encodes to itself), or SignatureError. */
export function b64decode(text) {
  let bytes;
  try {
    bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    /* refused below */
  }
  if (bytes && b64encode(bytes) === text) return bytes;
  throw new SignatureError("not canonical base64");
}

/** id(K): 16 hex digits of SHA-256(K). */
export const keyId = async (key) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", key), 0, 8)]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

export const verify = (publicKey, signature, message) =>
  crypto.subtle
    .importKey("raw", publicKey, "Ed25519", false, ["verify"])
    .then((key) => crypto.subtle.verify("Ed25519", key, signature, message))
    .catch(() => false);

/**
 * The signed definition of a survey document and its validated survey, verified under `publicKey`
 * (protocol §2, §7, in this order; shared/keychain.py's verify_document): key_id, when present,
 * names that key (a rotation is followed before); the signature verifies over the JCS bytes of the
 * definition as received; only then are its modules loaded and the definition validated; its id and
 * the document's are the one asked for. SignatureError (reason key-id, signature, id-mismatch) or InvalidSurvey.
 */
export async function verifyDocument(document, surveyId, publicKey, modules) {
  if (document === null || typeof document !== "object" || Array.isArray(document))
    throw new SignatureError("the survey document is not an object", "signature");
  if (document.key_id !== undefined && document.key_id !== (await keyId(publicKey))) {
    throw new SignatureError(
      `survey ${surveyId} is signed by key ${document.key_id}, not the pinned key, and the aggregator's key chain does not lead there`,
      "key-id",
    );
  }
  const { definition } = document;
  let signature, bytes;
  try {
    signature = b64decode(document.signature);
    bytes = canonicalBytes(definition);
  } catch {
    /* refused below */
  }
  if (!bytes || signature.length !== 64 || !(await verify(publicKey, signature, bytes)))
    throw new SignatureError(
      "the survey's signature does not verify under the pinned key",
      "signature",
    );
  await loadMechanisms(definition, modules); // only after the signature
  const survey = parseDefinition(definition);
  if (survey.id !== surveyId || (document.id ?? surveyId) !== surveyId)
    throw new SignatureError(`asked for survey ${surveyId}, got ${survey.id}`, "id-mismatch");
  return { definition, survey };
}

/**
 * The aggregator's key document (GET /api/v1/key), parsed strictly: a member twice could name two
 * keys (a parser keeping the first would see another than the one verified), so it is refused as
 * in survey documents, with the reason duplicate-member (client/pinning.py's _key_document). The
 * one path of keychain.js (rotation) and sealed.js (the encryption key). TransportError unless 200.
 */
export async function keyDocument(client) {
  const response = await client.request("GET", "/api/v1/key");
  if (response.status !== 200)
    throw new TransportError(`aggregator answered ${response.status} to GET key`, response.status);
  try {
    return parseJson(await response.text());
  } catch (error) {
    if (error instanceof InvalidSurvey)
      throw new SignatureError(`key rotation refused: ${error.message}`, error.reason);
    throw new SignatureError("key rotation refused: the key document is not JSON");
  }
}
