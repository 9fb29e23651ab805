// Sealing cost in the browser module (client/browser/sealing.js), run by benchmarks/sealing.py in
// Node and in headless Chromium: per question, the latency of one seal at a time, and the
// throughput of randomize + encode + seal with many reports in flight, beside the bare baseline
// (randomize + encode, no sealing) in the same run. Prints (Node) or returns (browser) JSON lines.
import { Question, loadMechanisms } from "../client/browser/survey.js";
import * as sealing from "../client/browser/sealing.js";

const hex = (text) => Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));

// Wall time, and (Node) the process's CPU time, worker threads included: on a shared machine the
// CPU time per report is the figure that does not depend on how much of a core the run got.
const cpu = () => (typeof process !== "undefined" ? process.cpuUsage() : null);
async function timed(seconds, step) {
  let count = 0;
  const start = performance.now(),
    cpuStart = cpu();
  let elapsed = 0;
  while (elapsed < seconds * 1000) {
    count += await step();
    elapsed = performance.now() - start;
  }
  const used = cpuStart && process.cpuUsage(cpuStart);
  return {
    count,
    perSecond: (count / elapsed) * 1000,
    microseconds: (elapsed * 1000) / count,
    ...(used && { cpuMicroseconds: (used.user + used.system) / count }),
  };
}

/** [{label, ...figures}] for each [label, question definition, answer]. */
export async function run(questions, publicKeyHex, seconds = 1, inFlight = 32) {
  await loadMechanisms({ questions: questions.map(([, d]) => d) });
  const publicKey = hex(publicKeyHex),
    out = [];
  for (const [label, definition, answer] of questions) {
    const q = new Question(definition, 0),
      value = q.checkAnswer(answer);
    const survey = { id: "bench", questions: [q] },
      size = sealing.unitSize(survey, q.id);
    const report = () => ({
      id: crypto.randomUUID(),
      question: q.id,
      payload: q.oracle.encode(q.oracle.randomize(value)),
    });
    const sealOne = () =>
      sealing.seal(publicKey, {
        surveyId: "bench",
        unit: q.id,
        plaintext: sealing.unitBody([report()], q.id),
        size,
      });
    for (let i = 0; i < 200; i++) await sealOne(); // warm up
    const bare = await timed(seconds, async () => {
      for (let i = 0; i < 1000; i++) report();
      return 1000;
    });
    const sequential = await timed(seconds, async () => {
      await sealOne();
      return 1;
    });
    const concurrent = await timed(seconds, async () => {
      await Promise.all(Array.from({ length: inFlight }, sealOne));
      return inFlight;
    });
    out.push({ label, bytes: sealing.sealedLength(size), bare, sequential, concurrent, inFlight });
  }
  return out;
}

/**
 * The floor under any seal: HPKE's X25519 alone (a fresh pair, its public half exported, one
 * DH), as sealing.js calls it, with `inFlight` at once; no KDF, no AEAD, no report.
 */
export async function x25519(seconds = 1, inFlight = 32, warmUp = 200) {
  const subtle = crypto.subtle,
    recipient = (await subtle.generateKey({ name: "X25519" }, true, ["deriveBits"])).publicKey;
  const kem = async () => {
    const pair = await subtle.generateKey({ name: "X25519" }, false, ["deriveBits"]);
    await Promise.all([
      subtle.exportKey("raw", pair.publicKey),
      subtle.deriveBits({ name: "X25519", public: recipient }, pair.privateKey, 256),
    ]);
  };
  for (let i = 0; i < warmUp; i++) await kem();
  return timed(seconds, async () => {
    await Promise.all(Array.from({ length: inFlight }, kem));
    return inFlight;
  });
}

/** randomize + encode + seal of one question alone, `inFlight` at once (the caller measures CPU time around it). */
export async function sealLoop([, definition, answer], publicKeyHex, seconds = 1, inFlight = 32) {
  await loadMechanisms({ questions: [definition] });
  const q = new Question(definition, 0),
    value = q.checkAnswer(answer),
    publicKey = hex(publicKeyHex);
  const size = sealing.unitSize({ id: "bench", questions: [q] }, q.id);
  const sealOne = () =>
    sealing.seal(publicKey, {
      surveyId: "bench",
      unit: q.id,
      size,
      plaintext: sealing.unitBody(
        [
          {
            id: crypto.randomUUID(),
            question: q.id,
            payload: q.oracle.encode(q.oracle.randomize(value)),
          },
        ],
        q.id,
      ),
    });
  return timed(seconds, async () => {
    await Promise.all(Array.from({ length: inFlight }, sealOne));
    return inFlight;
  }); // run() warmed up
}

// Module workers kept between calls, so the caller can measure CPU time around the timed part only.
let pool = [];
const ask = (worker, message) =>
  new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => resolve(data);
    worker.onerror = (event) => reject(new Error(event.message));
    worker.postMessage(message);
  });

/** `workers` dedicated module workers (default: navigator.hardwareConcurrency), each warmed up sealing `first`. */
export async function startWorkers(first, publicKeyHex, workers = navigator.hardwareConcurrency) {
  pool = Array.from({ length: workers }, () => new Worker(import.meta.url, { type: "module" }));
  await Promise.all(pool.map((worker) => ask(worker, [first, publicKeyHex, 0.3])));
  return workers;
}

/** sealLoop in every started worker at once (each a thread of its own): {perSecond} summed, {count}. */
export async function runWorkers(first, publicKeyHex, seconds = 1) {
  const results = await Promise.all(
    pool.map((worker) => ask(worker, [first, publicKeyHex, seconds])),
  );
  return {
    workers: pool.length,
    count: results.reduce((n, r) => n + r.count, 0),
    perSecond: results.reduce((n, r) => n + r.perSecond, 0),
  };
}

/** Ends the started workers (after the caller has read their threads' CPU time). */
export function stopWorkers() {
  for (const worker of pool) worker.terminate();
  pool = [];
}
if (typeof WorkerGlobalScope !== "undefined") {
  globalThis.onmessage = async ({ data: [first, key, seconds] }) =>
    postMessage(await sealLoop(first, key, seconds));
}

// -- where a seal's time goes: each WebCrypto call of sealing.js's seal alone, and trivial calls ---

// A raw X25519 private key as PKCS #8 (RFC 8410), its last 32 bytes from the CSPRNG: the KEM's
// alternatives below import it (WebCrypto takes private keys no other way).
const PKCS8_PREFIX = hex("302e020100300506032b656e04220420");
const randomPkcs8 = () => {
  const bytes = new Uint8Array(48);
  bytes.set(PKCS8_PREFIX);
  crypto.getRandomValues(bytes.subarray(16));
  return bytes;
};
const BASE_POINT = Uint8Array.from({ length: 32 }, (_, i) => (i === 0 ? 9 : 0)); // u = 9 (RFC 7748)
let keys;
async function callKeys(publicKeyHex) {
  const subtle = crypto.subtle,
    bytes = new Uint8Array(32);
  const [pair, hmac, hkdf, aes, recipient, base] = await Promise.all([
    subtle.generateKey({ name: "X25519" }, false, ["deriveBits"]),
    subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]),
    subtle.importKey("raw", bytes, "HKDF", false, ["deriveBits", "deriveKey"]),
    subtle.importKey("raw", bytes.subarray(0, 16), "AES-GCM", false, ["encrypt"]),
    subtle.importKey("raw", hex(publicKeyHex), { name: "X25519" }, false, []),
    subtle.importKey("raw", BASE_POINT, { name: "X25519" }, false, []),
  ]);
  return { pair, hmac, hkdf, aes, recipient, base };
}
const hkdf = (info) => ({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info });

/**
 * The calls, each as sealing.js makes it (its inputs' sizes: 32-byte DH, 50-byte KEM info, 65- and
 * 71-byte schedule infos, a 120-byte padded yes/no unit), and two trivial calls. [name, what, call].
 */
export const CALLS = [
  [
    "digest",
    "digest SHA-256 of 16 bytes (trivial)",
    (k) => crypto.subtle.digest("SHA-256", new Uint8Array(16)),
  ],
  [
    "hmac",
    "sign HMAC-SHA256 of 16 bytes, key imported once (trivial)",
    (k) => crypto.subtle.sign("HMAC", k.hmac, new Uint8Array(16)),
  ],
  [
    "generateKey",
    "generateKey X25519 (the ephemeral pair)",
    () => crypto.subtle.generateKey({ name: "X25519" }, false, ["deriveBits"]),
  ],
  ["exportKey", "exportKey raw (enc)", (k) => crypto.subtle.exportKey("raw", k.pair.publicKey)],
  [
    "dh",
    "deriveBits X25519 (the DH)",
    (k) =>
      crypto.subtle.deriveBits({ name: "X25519", public: k.recipient }, k.pair.privateKey, 256),
  ],
  [
    "importKey",
    "importKey raw HKDF (the labeled DH)",
    () => crypto.subtle.importKey("raw", new Uint8Array(49), "HKDF", false, ["deriveBits"]),
  ],
  [
    "sharedSecret",
    "deriveBits HKDF (shared_secret)",
    (k) => crypto.subtle.deriveBits(hkdf(new Uint8Array(50)), k.hkdf, 256),
  ],
  [
    "deriveKey",
    "deriveKey HKDF to AES-GCM (key)",
    (k) =>
      crypto.subtle.deriveKey(
        hkdf(new Uint8Array(65)),
        k.hkdf,
        { name: "AES-GCM", length: 128 },
        false,
        ["encrypt"],
      ),
  ],
  [
    "baseNonce",
    "deriveBits HKDF (base_nonce)",
    (k) => crypto.subtle.deriveBits(hkdf(new Uint8Array(71)), k.hkdf, 96),
  ],
  [
    "encrypt",
    "encrypt AES-128-GCM of 120 bytes",
    (k) =>
      crypto.subtle.encrypt(
        { name: "AES-GCM", iv: new Uint8Array(12) },
        k.aes,
        new Uint8Array(120),
      ),
  ],
];

const dhWith = (k, privateKey, publicKey = k.recipient) =>
  crypto.subtle.deriveBits({ name: "X25519", public: publicKey }, privateKey, 256);
const importEphemeral = (extractable) =>
  crypto.subtle.importKey("pkcs8", randomPkcs8(), { name: "X25519" }, extractable, ["deriveBits"]);
/** The KEM's X25519 part (enc and the DH) three ways, each RFC 9180 exact. [name, what, sequence]. */
export const KEMS = [
  [
    "kemGenerate",
    "generateKey + exportKey raw + deriveBits (sealing.js)",
    async (k) => {
      const pair = await crypto.subtle.generateKey({ name: "X25519" }, false, ["deriveBits"]);
      return Promise.all([
        crypto.subtle.exportKey("raw", pair.publicKey),
        dhWith(k, pair.privateKey),
      ]);
    },
  ],
  [
    "kemJwk",
    "importKey pkcs8 of random bytes + exportKey jwk (its x) + deriveBits",
    async (k) => {
      const privateKey = await importEphemeral(true);
      return Promise.all([crypto.subtle.exportKey("jwk", privateKey), dhWith(k, privateKey)]);
    },
  ],
  [
    "kemBasePoint",
    "importKey pkcs8 of random bytes + deriveBits with u=9 (enc) + deriveBits",
    async (k) => {
      const privateKey = await importEphemeral(false);
      return Promise.all([dhWith(k, privateKey, k.base), dhWith(k, privateKey)]);
    },
  ],
];

/**
 * The call `name` of CALLS or KEMS, `inFlight` at once for `seconds`, after `warmUp` seconds of
 * it: {count, perSecond, ...}. A caller measuring CPU time around it warms up in a call of its own.
 */
export async function call(name, publicKeyHex, seconds = 1, inFlight = 32, warmUp = 0.2) {
  keys ??= await callKeys(publicKeyHex);
  const [, , make] = [...CALLS, ...KEMS].find(([n]) => n === name);
  const step = async () => {
    await Promise.all(Array.from({ length: inFlight }, () => make(keys)));
    return inFlight;
  };
  if (warmUp > 0) await timed(warmUp, step);
  return timed(seconds, step);
}

if (
  typeof process !== "undefined" &&
  import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href
) {
  const { readFileSync } = await import("node:fs");
  const { questions, public_key: key } = JSON.parse(readFileSync(0, "utf8"));
  for (const line of await run(questions, key, Number(process.argv[2] ?? 1)))
    console.log(JSON.stringify(line));
  const kems = [];
  for (const [name, what] of KEMS)
    kems.push([what, await call(name, key, Math.min(Number(process.argv[2] ?? 1), 0.5))]);
  console.log(JSON.stringify({ x25519: await x25519(Number(process.argv[2] ?? 1)), kems }));
}
