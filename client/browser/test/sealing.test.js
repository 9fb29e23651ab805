// sealing.js against RFC 9180 Appendix A.1.1 and this protocol's own vectors
// (shared/vectors/sealing-vectors.json, also read by tests/shared/test_sealing.py).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  SealingError,
  SignatureError,
  b64decode,
  b64encode,
  keyId,
  parseDefinition,
  verify,
} from "../deniable.js";
import { loadMechanisms } from "../survey.js";
import * as sealing from "../sealing.js";

const VECTORS = JSON.parse(
  readFileSync(new URL("../../../shared/vectors/sealing-vectors.json", import.meta.url), "utf8"),
);
const RFC = VECTORS.rfc9180,
  OWN = VECTORS.deniable;
const hex = (text) => Uint8Array.from(text.match(/../g) ?? [], (h) => parseInt(h, 16));
const toHex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

test("RFC 9180 A.1.1: key schedule and every encryption, sealed and opened", async () => {
  assert.deepEqual([RFC.mode, RFC.kem_id, RFC.kdf_id, RFC.aead_id], [0, 32, 1, 1]);
  const info = hex(RFC.info),
    pkR = hex(RFC.pkRm);
  const ephemeral = {
    privateKey: await sealing.importPrivateKey(hex(RFC.skEm)),
    publicKey: hex(RFC.pkEm),
  };
  const skR = await sealing.importPrivateKey(hex(RFC.skRm));
  // The derived public keys are the RFC's.
  for (const [sk, pk] of [
    ["skRm", "pkRm"],
    ["skEm", "pkEm"],
  ]) {
    const jwk = await crypto.subtle
      .importKey(
        "pkcs8",
        new Uint8Array([...hex("302e020100300506032b656e04220420"), ...hex(RFC[sk])]),
        { name: "X25519" },
        true,
        ["deriveBits"],
      )
      .then((k) => crypto.subtle.exportKey("jwk", k));
    assert.equal(toHex(Buffer.from(jwk.x, "base64url")), RFC[pk]);
  }
  const schedule = await sealing.keySchedule(hex(RFC.shared_secret), info, { extractable: true });
  assert.equal(toHex(schedule.context), RFC.key_schedule_context);
  assert.equal(toHex(new Uint8Array(await crypto.subtle.exportKey("raw", schedule.key))), RFC.key);
  assert.equal(toHex(schedule.baseNonce), RFC.base_nonce);
  assert.equal(RFC.encryptions.length, 6);
  for (const e of RFC.encryptions) {
    const options = { aad: hex(e.aad), seq: e.sequence_number };
    const sealed = await sealing.sealBase(pkR, info, hex(e.pt), { ...options, ephemeral });
    assert.equal(toHex(sealed), RFC.enc + e.ct, `sequence ${e.sequence_number}`);
    assert.equal(toHex(await sealing.openBase(skR, pkR, info, sealed, options)), e.pt);
    await assert.rejects(
      sealing.openBase(skR, pkR, info, sealed, { ...options, seq: e.sequence_number + 1 }),
      SealingError,
    );
  }
});

await loadMechanisms(OWN.survey);
const SURVEY = parseDefinition(OWN.survey);
const PRIVATE = hex(OWN.recipient_private_key),
  PUBLIC = hex(OWN.recipient_public_key);

test("own vectors: info, padding, unit sizes", () => {
  for (const v of OWN.info) assert.equal(toHex(sealing.info(v.survey_id, v.unit)), v.info);
  for (const v of OWN.padding) {
    assert.equal(toHex(sealing.pad(hex(v.body), v.size)), v.padded);
    assert.equal(toHex(sealing.unpad(hex(v.padded))), v.body);
  }
  for (const [unit, size] of Object.entries(OWN.unit_sizes))
    assert.equal(sealing.unitSize(SURVEY, unit), size, unit || "submission");
});

test("own vectors: Python's sealed blobs open to their bodies; bodies are rebuilt byte for byte", async () => {
  for (const v of OWN.sealed) {
    const body = await sealing.openSealed(PRIVATE, PUBLIC, {
      surveyId: OWN.survey_id,
      unit: v.unit,
      sealed: hex(v.sealed),
      size: v.size,
    });
    assert.equal(new TextDecoder().decode(body), v.body);
    const document = JSON.parse(v.body);
    assert.equal(
      new TextDecoder().decode(sealing.unitBody(document.reports ?? [document], v.unit)),
      v.body,
    );
  }
  for (const v of OWN.invalid) {
    await assert.rejects(
      sealing.openSealed(PRIVATE, PUBLIC, {
        surveyId: OWN.survey_id,
        unit: v.unit,
        sealed: hex(v.sealed),
      }),
      SealingError,
      v.why,
    );
  }
});

test("seal: fresh ephemeral keys, one length whatever the answer, tampering refused", async () => {
  const lengths = new Set();
  for (const q of SURVEY.questions) {
    const size = sealing.unitSize(SURVEY, q.id);
    const answers =
      q.type === "yes_no"
        ? [true, false]
        : q.type === "numeric"
          ? [q.lo, q.hi]
          : q.type === "multiple_choice"
            ? [[], q.options]
            : q.options.slice(0, 3);
    const sizes = new Set();
    for (const answer of answers) {
      const report = {
        id: crypto.randomUUID(),
        question: q.id,
        payload: q.oracle.encode(q.oracle.randomize(q.checkAnswer(answer))),
      };
      const sealed = await sealing.seal(PUBLIC, {
        surveyId: "s",
        unit: q.id,
        plaintext: sealing.unitBody([report], q.id),
        size,
      });
      sizes.add(sealed.length);
      assert.equal(
        new TextDecoder().decode(
          await sealing.openSealed(PRIVATE, PUBLIC, { surveyId: "s", unit: q.id, sealed }),
        ),
        new TextDecoder().decode(sealing.unitBody([report], q.id)),
      );
    }
    assert.deepEqual([...sizes], [sealing.sealedLength(size)], q.id);
    lengths.add(q.id);
  }
  const one = await sealing.seal(PUBLIC, {
    surveyId: "s",
    unit: "",
    plaintext: new Uint8Array([1]),
    size: 4,
  });
  const two = await sealing.seal(PUBLIC, {
    surveyId: "s",
    unit: "",
    plaintext: new Uint8Array([1]),
    size: 4,
  });
  assert.notEqual(toHex(one.subarray(0, 32)), toHex(two.subarray(0, 32)));
  for (let i = 0; i < one.length; i += 7) {
    const altered = one.slice();
    altered[i] ^= 1;
    await assert.rejects(
      sealing.openSealed(PRIVATE, PUBLIC, { surveyId: "s", unit: "", sealed: altered }),
      SealingError,
    );
  }
  await assert.rejects(
    sealing.openSealed(PRIVATE, PUBLIC, { surveyId: "s", unit: "q", sealed: one }),
    SealingError,
  );
  assert.throws(() => sealing.pad(new Uint8Array(5), 4), SealingError);
  await assert.rejects(
    sealing.seal(new Uint8Array(32), {
      surveyId: "s",
      unit: "",
      plaintext: new Uint8Array(0),
      size: 0,
    }),
    /low-order/,
  );
  await assert.rejects(
    sealing.openSealed(PRIVATE, PUBLIC, {
      surveyId: "s",
      unit: "",
      sealed: new Uint8Array([...new Uint8Array(32), ...one.subarray(32)]),
    }),
    SealingError,
  );
  await assert.rejects(
    sealing.seal(new Uint8Array(31), {
      surveyId: "s",
      unit: "",
      plaintext: new Uint8Array(0),
      size: 0,
    }),
    SealingError,
  );
});

test("seals for many keys, surveys and units at once: each opens under its own only", async () => {
  // sealing.js prepares once what the seals of one (key, survey, unit) share: ids whose
  // concatenations collide, and two keys, sealed interleaved, must never share an info or key.
  const otherPrivate = crypto.getRandomValues(new Uint8Array(32));
  const pkcs8 = new Uint8Array([...hex("302e020100300506032b656e04220420"), ...otherPrivate]);
  const jwk = await crypto.subtle.exportKey(
    "jwk",
    await crypto.subtle.importKey("pkcs8", pkcs8, { name: "X25519" }, true, ["deriveBits"]),
  );
  const otherPublic = new Uint8Array(Buffer.from(jwk.x, "base64url"));
  const keys = [
    [PRIVATE, PUBLIC],
    [otherPrivate, otherPublic],
  ];
  const ids = [
    ["ab", "c"],
    ["a", "bc"],
    ["abc", ""],
    ["1:a", "b"],
    ["", "1:ab"],
  ];
  const jobs = keys.flatMap((pair) => ids.map((id) => [pair, id]));
  const sealed = await Promise.all(
    [...jobs, ...jobs].map(([[, publicKey], [surveyId, unit]], i) =>
      sealing.seal(publicKey, { surveyId, unit, plaintext: new Uint8Array([i]), size: 1 }),
    ),
  );
  for (const [i, blob] of sealed.entries()) {
    const [[privateKey, publicKey], [surveyId, unit]] = jobs[i % jobs.length];
    assert.deepEqual(
      [
        ...(await sealing.openSealed(privateKey, publicKey, {
          surveyId,
          unit,
          sealed: blob,
          size: 1,
        })),
      ],
      [i],
    );
    for (const [[otherKey, otherPublicKey], [otherSurvey, otherUnit]] of jobs) {
      if (otherKey === privateKey && otherSurvey === surveyId && otherUnit === unit) continue;
      await assert.rejects(
        sealing.openSealed(otherKey, otherPublicKey, {
          surveyId: otherSurvey,
          unit: otherUnit,
          sealed: blob,
        }),
        SealingError,
      );
    }
  }
});

test("the encryption key is taken only when the signing key signed it", async () => {
  const signing = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
  const signingRaw = new Uint8Array(await crypto.subtle.exportKey("raw", signing.publicKey));
  const publicKey = b64encode(PUBLIC);
  const message = new TextEncoder().encode(
    `deniable-encryption-key/1\nsigning_key:${b64encode(signingRaw)}\nsuite:${sealing.SUITE}\npublic_key:${publicKey}\n`,
  );
  const signature = b64encode(
    new Uint8Array(await crypto.subtle.sign("Ed25519", signing.privateKey, message)),
  );
  const member = {
    algorithm: "X25519",
    suite: sealing.SUITE,
    public_key: publicKey,
    key_id: await keyId(PUBLIC),
    signature,
  };
  const tools = { verify, b64decode, b64encode, keyId, SignatureError };
  assert.deepEqual(
    await sealing.verifiedEncryptionKey({ encryption_key: member }, signingRaw, tools),
    PUBLIC,
  );
  const other = new Uint8Array(32).fill(9);
  for (const bad of [
    {},
    { ...member, public_key: b64encode(other), key_id: await keyId(other) },
    { ...member, extra: 1 },
    { ...member, key_id: "0".repeat(16) },
  ]) {
    await assert.rejects(
      sealing.verifiedEncryptionKey({ encryption_key: bad }, signingRaw, tools),
      SignatureError,
    );
  }
  await assert.rejects(
    sealing.verifiedEncryptionKey({ encryption_key: member }, new Uint8Array(32).fill(1), tools),
    SignatureError,
  );
});
