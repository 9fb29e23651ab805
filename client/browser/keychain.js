// Key rotation: follow the aggregator's signed chain from the pinned key (docs/key-rotation.md,
// normative; mirrors shared/keychain.py). A pin is {key, sequence (null if given from outside),
// retired: [key ids followed away from]}. Any refusal throws SignatureError: the caller keeps
// its pin and sends nothing.

import { SignatureError } from "./randomness.js";

const MAX_LINKS = 10000;
const LINK_FIELDS = ["endorsement", "key_id", "previous_key_id", "previous_public_key", "public_key", "sequence", "signature"];

/** Standard base64 with padding, canonical only (re-encodes to itself). */
export function b64decode(text) {
  if (typeof text !== "string" || text.length % 4 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw new SignatureError("not canonical base64");
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  if (b64encode(bytes) !== text) throw new SignatureError("not canonical base64");
  return bytes;
}

export function b64encode(bytes) { return btoa(String.fromCharCode(...bytes)); }

/** id(K): the first 16 hex digits of SHA-256 of the 32 raw key bytes. */
export async function keyId(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest.subarray(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function verify(publicKey, signature, message) {
  try {
    const key = await crypto.subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
    return await crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
  } catch {
    return false;
  }
}

function key32(text, what) {
  const bytes = b64decode(text);
  if (bytes.length !== 32) throw new SignatureError(`${what} is not a 32-byte Ed25519 key`);
  return bytes;
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The new pin after verifying key document D against `pin` (steps 1–5), or SignatureError. */
export async function followRotation(pin, D) {
  const refuse = (why) => { throw new SignatureError(`key rotation refused: ${why}`); };
  if (D?.algorithm !== "Ed25519") refuse("the key document is not Ed25519");
  const K = key32(D.public_key, "public_key");
  if (D.key_id !== await keyId(K)) refuse("key_id does not name public_key");
  const chain = D.chain;
  if (!Array.isArray(chain) || chain.length > MAX_LINKS) refuse("chain is not a list of links");
  chain.forEach((link, i) => {
    if (link === null || typeof link !== "object" || Object.keys(link).sort().join() !== LINK_FIELDS.join()) refuse(`link ${i + 1} has the wrong members`);
    if (link.sequence !== i + 1) refuse("links out of order");
  });
  if (D.sequence !== chain.length) refuse("sequence is not the number of links");
  if (chain.length && !same(key32(chain.at(-1).public_key, "last link"), K)) refuse("the last link is not the current key");
  const P = pin.key;
  if (same(K, P)) {
    if (pin.sequence !== null && D.sequence !== pin.sequence) refuse("the sequence of the pinned key changed");
    return pin;
  }
  const j = chain.findIndex((link) => link.previous_public_key === b64encode(P));
  if (j < 0) refuse("the served rotation chain does not start from the pinned key");
  if (pin.sequence !== null && chain[j].sequence !== pin.sequence + 1) refuse("the chain was truncated or renumbered");
  let prev = P;
  const seen = new Set([await keyId(P), ...pin.retired]);
  const retired = [...pin.retired];
  for (const link of chain.slice(j)) {
    if (!same(key32(link.previous_public_key, "previous_public_key"), prev)) refuse("a link does not continue the chain");
    const B = key32(link.public_key, "public_key");
    if (link.previous_key_id !== await keyId(prev) || link.key_id !== await keyId(B)) refuse("a link's key ids are wrong");
    if (seen.has(link.key_id)) refuse("a key is followed twice");
    const message = new TextEncoder().encode(
      `deniable-key-rotation/1\nsequence:${link.sequence}\nprevious:${b64encode(prev)}\nnext:${b64encode(B)}\n`);
    if (!(await verify(prev, b64decode(link.signature), message))) refuse("a link is not signed by the previous key");
    if (!(await verify(B, b64decode(link.endorsement), message))) refuse("a link is not endorsed by the next key");
    seen.add(link.key_id);
    retired.push(await keyId(prev));
    prev = B;
  }
  return { key: K, sequence: D.sequence, retired };
}
