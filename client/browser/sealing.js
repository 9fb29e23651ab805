// Sealing reports for the aggregator (shared/sealing.py; docs/protocol.md "Sealing", normative).
// HPKE (RFC 9180) base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, single-shot
// (sequence 0, empty aad). The RFC 9180 key schedule (§4.1, §5.1) is written here over WebCrypto:
// X25519 for the KEM, HKDF-SHA256 for each LabeledExtract+LabeledExpand pair, HMAC-SHA256 for the
// two lone LabeledExtracts, AES-GCM for the AEAD. No primitive is implemented here.

import { SealingError } from "./randomness.js";

export const FORMAT = "deniable.sealed/1";
export const SUITE = "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM";
export const ENC_LENGTH = 32,
  TAG_LENGTH = 16,
  LENGTH_PREFIX = 4,
  OVERHEAD = ENC_LENGTH + LENGTH_PREFIX + TAG_LENGTH;
export const MAX_SIZE = 1 << 24;

let subtleCrypto; // read once: a getter on every call shows in a seal's profile
const subtle = () => (subtleCrypto ??= globalThis.crypto.subtle);
const utf8 = (text) => new TextEncoder().encode(text);
const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};
const i2osp = (value, length) =>
  Uint8Array.from({ length }, (_, i) => Math.floor(value / 256 ** (length - 1 - i)) % 256);

const HPKE_V1 = utf8("HPKE-v1");
const KEM_SUITE = concat(utf8("KEM"), i2osp(0x20, 2)); // suite_id of the KEM (§4.1)
const HPKE_SUITE = concat(utf8("HPKE"), i2osp(0x20, 2), i2osp(1, 2), i2osp(1, 2)); // (§5.1)
const EMPTY = new Uint8Array(0),
  ZERO_SALT = new Uint8Array(32); // HMAC pads a key to its block: "" ≡ 32 zeros
const labeledIkm = (suite, label, ikm) => concat(HPKE_V1, suite, utf8(label), ikm);
const labeledInfo = (suite, label, info, length) =>
  concat(i2osp(length, 2), HPKE_V1, suite, utf8(label), info);

/** LabeledExtract("", label, ikm) alone (psk_id_hash, info_hash): HMAC-SHA256 with an all-zero key. */
let zeroKey;
async function labeledExtract(suite, label, ikm) {
  zeroKey ??= subtle().importKey("raw", ZERO_SALT, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return new Uint8Array(await subtle().sign("HMAC", await zeroKey, labeledIkm(suite, label, ikm)));
}

/** The HPKE info: "deniable.sealed/1" || I2OSP(len(survey id), 2) || survey id || I2OSP(len(unit), 2) || unit. */
export function info(surveyId, unit) {
  const field = (value, what) => {
    if (typeof value !== "string") throw new SealingError(`${what} must be a string`);
    const bytes = utf8(value);
    if (bytes.length > 0xffff) throw new SealingError(`${what} is longer than 65535 bytes`);
    return concat(i2osp(bytes.length, 2), bytes);
  };
  return concat(utf8(FORMAT), field(surveyId, "surveyId"), field(unit, "unit"));
}

const checkSize = (size) => {
  if (!Number.isInteger(size) || size < 0 || size > MAX_SIZE)
    throw new SealingError(`size must be an integer in [0, ${MAX_SIZE}]`);
  return size;
};
export const sealedLength = (size) => checkSize(size) + OVERHEAD;

/** I2OSP(len(body), 4) || body || zeros: exactly 4 + size bytes. */
export function pad(body, size) {
  checkSize(size);
  if (!(body instanceof Uint8Array)) throw new SealingError("plaintext must be a Uint8Array");
  if (body.length > size)
    throw new SealingError(`plaintext of ${body.length} bytes does not fit the unit's ${size}`);
  const out = new Uint8Array(LENGTH_PREFIX + size);
  out.set(i2osp(body.length, LENGTH_PREFIX));
  out.set(body, LENGTH_PREFIX);
  return out;
}

export function unpad(padded) {
  if (padded.length < LENGTH_PREFIX)
    throw new SealingError("sealed plaintext is shorter than its length prefix");
  const length = new DataView(padded.buffer, padded.byteOffset, padded.byteLength).getUint32(0),
    end = LENGTH_PREFIX + length;
  if (end > padded.length)
    throw new SealingError("sealed plaintext's length prefix runs past its end");
  if (padded.subarray(end).some((b) => b !== 0))
    throw new SealingError("sealed plaintext's padding is not all zeros");
  return padded.slice(LENGTH_PREFIX, end);
}

// The key schedule's parts that depend only on info (§5.1): its context (psk_id_hash, info_hash)
// and the labeled infos of key and base_nonce, which hold it.
async function scheduleInfos(infoBytes) {
  const [pskIdHash, infoHash] = await Promise.all([
    labeledExtract(HPKE_SUITE, "psk_id_hash", EMPTY),
    labeledExtract(HPKE_SUITE, "info_hash", infoBytes),
  ]);
  const context = concat(new Uint8Array([0]), pskIdHash, infoHash); // mode_base = 0
  return {
    context,
    keyInfo: labeledInfo(HPKE_SUITE, "key", context, 16),
    nonceInfo: labeledInfo(HPKE_SUITE, "base_nonce", context, 12),
  };
}

// secret = LabeledExtract(shared_secret, "secret", psk = ""): its input keying material is the
// constant labeled empty psk, and shared_secret the salt, so one imported HKDF key serves every seal.
let secretIkm;
const secretParameters = (sharedSecret, info) => ({
  name: "HKDF",
  hash: "SHA-256",
  salt: sharedSecret,
  info,
});

/** key (an AES-GCM CryptoKey) and base_nonce from the shared secret and `scheduleInfos`. */
async function schedule(sharedSecret, { context, keyInfo, nonceInfo }, extractable) {
  secretIkm ??= subtle().importKey("raw", labeledIkm(HPKE_SUITE, "secret", EMPTY), "HKDF", false, [
    "deriveBits",
    "deriveKey",
  ]);
  const ikm = await secretIkm;
  // key = LabeledExpand(secret, "key", context, Nk), derived straight into an AES-GCM key (one call
  // less than bits then import); base_nonce = LabeledExpand(secret, "base_nonce", context, Nn).
  const [key, baseNonce] = await Promise.all([
    subtle().deriveKey(
      secretParameters(sharedSecret, keyInfo),
      ikm,
      { name: "AES-GCM", length: 128 },
      extractable,
      ["encrypt", "decrypt"],
    ),
    subtle().deriveBits(secretParameters(sharedSecret, nonceInfo), ikm, 96),
  ]);
  return { key, baseNonce: new Uint8Array(baseNonce), context };
}

/**
 * KeySchedule (§5.1) from the KEM's shared secret: {key (an AES-GCM CryptoKey), baseNonce, context}.
 * Exported for the RFC 9180 test vectors (`extractable` lets them read the key's bytes).
 */
export const keySchedule = async (sharedSecret, infoBytes, { extractable = false } = {}) =>
  schedule(sharedSecret, await scheduleInfos(infoBytes), extractable);

/**
 * ExtractAndExpand of DHKEM (§4.1): the shared secret from dh, and `kemInfo` (the labeled info of
 * "shared_secret" over enc || pkR, `kemInfoFor`) with enc written in. One WebCrypto HKDF call.
 */
const EAE_PRK = labeledIkm(KEM_SUITE, "eae_prk", EMPTY);
async function kemSharedSecret(dhBytes, enc, kemInfo) {
  const ikm = new Uint8Array(EAE_PRK.length + dhBytes.length);
  ikm.set(EAE_PRK);
  ikm.set(dhBytes, EAE_PRK.length);
  const info = kemInfo.slice();
  info.set(enc, info.length - 2 * ENC_LENGTH);
  const key = await subtle().importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
  return subtle().deriveBits({ name: "HKDF", hash: "SHA-256", salt: EMPTY, info }, key, 256);
}
const kemInfoFor = (pkR) =>
  labeledInfo(KEM_SUITE, "shared_secret", concat(new Uint8Array(ENC_LENGTH), pkR), 32);

const x25519Public = (raw) => {
  if (!(raw instanceof Uint8Array) || raw.length !== 32)
    throw new SealingError("the recipient's public key must be 32 raw X25519 bytes");
  return subtle().importKey("raw", raw, { name: "X25519" }, false, []);
};
// PKCS #8 for a raw X25519 private key (RFC 8410): WebCrypto imports private keys no other way.
const PKCS8_X25519 = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20,
]);
export const importPrivateKey = (raw) =>
  subtle().importKey("pkcs8", concat(PKCS8_X25519, raw), { name: "X25519" }, false, ["deriveBits"]);

const dh = async (privateKey, publicKey) => {
  try {
    return new Uint8Array(
      await subtle().deriveBits({ name: "X25519", public: publicKey }, privateKey, 256),
    );
  } catch {
    // an all-zero shared secret (a low-order point) is refused, as RFC 9180 §7.1.4 asks
    throw new SealingError("X25519 refused the key (a low-order point)");
  }
};

/** AES-128-GCM with the nonce base_nonce XOR I2OSP(seq, 12) (§5.2). */
async function aead(direction, key, baseNonce, seq, aad, data) {
  const iv = baseNonce.slice();
  if (seq !== 0) {
    // XOR I2OSP(0, 12) changes nothing
    const seqBytes = i2osp(seq, 12);
    for (let i = 0; i < 12; i++) iv[i] ^= seqBytes[i];
  }
  return new Uint8Array(
    await subtle()[direction](
      { name: "AES-GCM", iv, additionalData: aad, tagLength: 128 },
      key,
      data,
    ),
  );
}

/** What every seal to `pkR` under `infoBytes` shares, prepared once: the recipient's key, the labeled infos. */
async function prepare(pkR, infoBytes) {
  const [recipient, infos] = await Promise.all([x25519Public(pkR), scheduleInfos(infoBytes)]);
  return { recipient, kemInfo: kemInfoFor(pkR), ...infos };
}

/** Encap (§4.1) + KeySchedule + Seal with a prepared recipient and info. */
async function sealPrepared(prepared, plaintext, { aad = EMPTY, seq = 0, ephemeral } = {}) {
  // A fresh pair per seal; its private half is not extractable (nothing here needs its bytes).
  // The public half's export and the DH run at once.
  const pair = ephemeral ?? (await subtle().generateKey({ name: "X25519" }, false, ["deriveBits"]));
  const [enc, dhBytes] = await Promise.all([
    ephemeral
      ? ephemeral.publicKey
      : subtle()
          .exportKey("raw", pair.publicKey)
          .then((raw) => new Uint8Array(raw)),
    dh(pair.privateKey, prepared.recipient),
  ]);
  const { key, baseNonce } = await schedule(
    await kemSharedSecret(dhBytes, enc, prepared.kemInfo),
    prepared,
    false,
  );
  const ciphertext = await aead("encrypt", key, baseNonce, seq, aad, plaintext);
  const out = new Uint8Array(ENC_LENGTH + ciphertext.length);
  out.set(enc);
  out.set(ciphertext, ENC_LENGTH);
  return out;
}

/**
 * SetupBaseS + Seal (§5.1.1, §5.2). `ephemeral` ({privateKey: CryptoKey, publicKey: raw}) only for
 * test vectors; otherwise a fresh X25519 pair from the CSPRNG. Returns enc || ciphertext.
 */
export const sealBase = async (pkR, infoBytes, plaintext, options) =>
  sealPrepared(await prepare(pkR, infoBytes), plaintext, options);

/** SetupBaseR + Open (§5.1.1, §5.2) of enc || ciphertext, or SealingError. */
export async function openBase(skR, pkR, infoBytes, sealed, { aad = EMPTY, seq = 0 } = {}) {
  if (!(sealed instanceof Uint8Array) || sealed.length < ENC_LENGTH + TAG_LENGTH)
    throw new SealingError("sealed blob is too short");
  const enc = sealed.subarray(0, ENC_LENGTH);
  const shared = await kemSharedSecret(
    await dh(skR, await x25519Public(enc)),
    enc,
    kemInfoFor(pkR),
  );
  const { key, baseNonce } = await keySchedule(shared, infoBytes);
  try {
    return await aead("decrypt", key, baseNonce, seq, aad, sealed.subarray(ENC_LENGTH));
  } catch {
    throw new SealingError(
      "sealed blob does not open: altered, or sealed for another key, survey or unit",
    );
  }
}

// A page seals every unit of a survey to the same key: what the seals of one (key, survey, unit)
// share is prepared once (the info's encoding and hashes, the recipient's imported key).
const prepared = new Map();
function preparedFor(publicKey, surveyId, unit) {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32)
    throw new SealingError("the recipient's public key must be 32 raw X25519 bytes");
  if (typeof surveyId !== "string" || typeof unit !== "string")
    return prepare(publicKey, info(surveyId, unit)); // info() says which
  const cacheKey = `${String.fromCharCode.apply(null, publicKey)}${surveyId.length}:${surveyId}${unit}`; // 32 chars, then unambiguous
  let entry = prepared.get(cacheKey);
  if (!entry) {
    entry = prepare(publicKey, info(surveyId, unit));
    entry.catch(() => prepared.delete(cacheKey));
    if (prepared.size >= 256) prepared.clear();
    prepared.set(cacheKey, entry);
  }
  return entry;
}

/** enc || ciphertext of `plaintext` padded to `size`, for the aggregator's `publicKey` (32 raw bytes). */
export async function seal(publicKey, { surveyId, unit, plaintext, size }) {
  const padded = pad(plaintext, size);
  return sealPrepared(await preparedFor(publicKey, surveyId, unit), padded);
}

/** The body sealed in `sealed` (private key: 32 raw bytes), or SealingError; `size` checks the length. */
export async function openSealed(privateKey, publicKey, { surveyId, unit, sealed, size }) {
  if (size !== undefined && sealed.length !== sealedLength(size))
    throw new SealingError(
      `sealed blob of ${sealed.length} bytes; this unit's are ${sealedLength(size)}`,
    );
  if (sealed.length < OVERHEAD)
    throw new SealingError(`sealed blob of ${sealed.length} bytes is shorter than ${OVERHEAD}`);
  return unpad(
    await openBase(await importPrivateKey(privateKey), publicKey, info(surveyId, unit), sealed),
  );
}

// -- what a unit holds (shared/sealing.py unit_body, unit_size) ----------------------------------

const reportJson = ({ id, payload, question }) => JSON.stringify({ id, payload, question }); // keys sorted; ids and hex need no escapes
const REPORT_FRAME = '{"id":"","payload":"","question":""}'.length,
  UUID_LENGTH = 36;

/** The body of a unit: its one report (unit = question id), or {"reports": [...]} (unit = ""). */
export function unitBody(reports, unit) {
  if (unit) {
    if (reports.length !== 1 || reports[0].question !== unit)
      throw new SealingError(`a question unit holds exactly one report of question ${unit}`);
    return utf8(reportJson(reports[0]));
  }
  if (!reports.length) throw new SealingError("a submission unit holds at least one report");
  return utf8(`{"reports":[${reports.map(reportJson).join(",")}]}`);
}

const reportSize = (q) => REPORT_FRAME + UUID_LENGTH + 2 * q.oracle.reportBytes + q.id.length;

/** The fixed body size of a unit of a parsed survey: its longest possible body. */
export function unitSize(survey, unit) {
  if (unit) {
    const q = survey.questions.find((x) => x.id === unit);
    if (!q) throw new SealingError(`survey ${survey.id} has no question ${unit}`);
    return reportSize(q);
  }
  const sizes = survey.questions.map(reportSize);
  return '{"reports":[]}'.length + sizes.reduce((n, s) => n + s, 0) + Math.max(0, sizes.length - 1);
}

// -- the aggregator's encryption key (docs/key-rotation.md; shared/keychain.py) ------------------

const ENCRYPTION_FIELDS = "algorithm,key_id,public_key,signature,suite";

/**
 * The key document's encryption key (32 raw bytes), verified under `signingKey` (the pinned,
 * current Ed25519 key). `verify`, `b64decode`, `b64encode`, `keyId`: deniable.js's (passed in, so
 * this module imports nothing but errors). Any doubt: SignatureError.
 */
export async function verifiedEncryptionKey(
  document,
  signingKey,
  { verify, b64decode, b64encode, keyId, SignatureError },
) {
  const refuse = (why) => {
    throw new SignatureError(`encryption key refused: ${why}`);
  };
  const member = document?.encryption_key;
  if (
    !member ||
    typeof member !== "object" ||
    Object.keys(member).sort().join() !== ENCRYPTION_FIELDS
  )
    refuse("the key document has no well-formed encryption_key");
  if (member.algorithm !== "X25519" || member.suite !== SUITE)
    refuse(`it is not X25519 for ${SUITE}`);
  const raw = b64decode(member.public_key);
  if (raw.length !== 32) refuse("it is not 32 bytes");
  if (member.key_id !== (await keyId(raw))) refuse("key_id does not name it");
  const message = utf8(
    `deniable-encryption-key/1\nsigning_key:${b64encode(signingKey)}\nsuite:${SUITE}\npublic_key:${member.public_key}\n`,
  );
  if (!(await verify(signingKey, b64decode(member.signature), message)))
    refuse("it is not signed by the aggregator's key");
  return raw;
}
