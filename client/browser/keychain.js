// Key rotation: follow the aggregator's signed chain from the pinned key (docs/key-rotation.md,
// normative; mirrors shared/keychain.py), imported by deniable.js only when a survey names another
// key, or to trust on first use. A pin is {key, sequence (null if given from outside), retired:
// [ids of the keys followed away from]}. Every refusal is a SignatureError: the pin is kept.

import { SignatureError } from "./randomness.js";
import { b64decode, b64encode, keyDocument, keyId, verify } from "./signatures.js";

const LINK_FIELDS =
  "endorsement,key_id,previous_key_id,previous_public_key,public_key,sequence,signature";

/** The new pin after verifying key document D against `pin` (steps 1–5), or SignatureError. */
export async function followRotation(pin, D) {
  const refuse = (why) => {
    throw new SignatureError(`key rotation refused: ${why}`);
  };
  const key32 = (text) => {
    const bytes = b64decode(text);
    return bytes.length === 32 ? bytes : refuse("a key is not 32 bytes");
  };
  const same = (a, b) => b64encode(a) === b64encode(b);
  if (D?.algorithm !== "Ed25519") refuse("the key document is not Ed25519");
  const K = key32(D.public_key),
    chain = D.chain;
  if (D.key_id !== (await keyId(K))) refuse("key_id does not name public_key");
  if (!Array.isArray(chain) || chain.length > 10000) refuse("chain is not a list of links");
  chain.forEach((link, i) => {
    if (typeof link !== "object" || !link || Object.keys(link).sort().join() !== LINK_FIELDS)
      refuse(`link ${i + 1} has the wrong members`);
    if (link.sequence !== i + 1) refuse("links out of order");
  });
  if (D.sequence !== chain.length) refuse("sequence is not the number of links");
  if (chain.length && !same(key32(chain.at(-1).public_key), K))
    refuse("the last link is not the current key");
  let previous = pin.key;
  if (same(K, previous))
    return pin.sequence === null || D.sequence === pin.sequence
      ? pin
      : refuse("the sequence of the pinned key changed");
  const j = chain.findIndex((link) => link.previous_public_key === b64encode(previous));
  if (j < 0) refuse("the served rotation chain does not start from the pinned key");
  if (pin.sequence !== null && chain[j].sequence !== pin.sequence + 1)
    refuse("the chain was truncated or renumbered");
  const retired = [...pin.retired],
    seen = new Set([await keyId(previous), ...retired]);
  for (const link of chain.slice(j)) {
    if (!same(key32(link.previous_public_key), previous))
      refuse("a link does not continue the chain");
    const next = key32(link.public_key);
    if (link.previous_key_id !== (await keyId(previous)) || link.key_id !== (await keyId(next)))
      refuse("a link's key ids are wrong");
    if (seen.has(link.key_id)) refuse("a key is followed twice");
    const message = new TextEncoder().encode(
      `deniable-key-rotation/1\nsequence:${link.sequence}\nprevious:${b64encode(previous)}\nnext:${b64encode(next)}\n`,
    );
    if (!(await verify(previous, b64decode(link.signature), message)))
      refuse("a link is not signed by the previous key");
    if (!(await verify(next, b64decode(link.endorsement), message)))
      refuse("a link is not endorsed by the next key");
    seen.add(link.key_id);
    retired.push(await keyId(previous));
    previous = next;
  }
  return { key: K, sequence: D.sequence, retired };
}

function savePin(client, pin) {
  const state = client.load();
  state.keys[client.baseUrl] = { ...pin, key: b64encode(pin.key) };
  client.save(state);
  return pin;
}

/** The client's new pin, stored: `pin` followed along the served chain (or SignatureError, the pin kept). */
export const rotate = async (client, pin) =>
  savePin(client, await followRotation(pin, await keyDocument(client)));

/** Trust on first use (only when asked for): the served key, pinned after the document's checks. */
export async function trustOnFirstUse(client) {
  const D = await keyDocument(client);
  return savePin(client, {
    ...(await followRotation({ key: b64decode(D?.public_key), sequence: null, retired: [] }, D)),
    sequence: D.sequence,
  });
}
