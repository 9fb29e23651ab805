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
  const start = performance.now(), cpuStart = cpu();
  let elapsed = 0;
  while (elapsed < seconds * 1000) {
    count += await step();
    elapsed = performance.now() - start;
  }
  const used = cpuStart && process.cpuUsage(cpuStart);
  return { count, perSecond: (count / elapsed) * 1000, microseconds: (elapsed * 1000) / count, ...(used && { cpuMicroseconds: (used.user + used.system) / count }) };
}

/** [{label, ...figures}] for each [label, question definition, answer]. */
export async function run(questions, publicKeyHex, seconds = 1, inFlight = 32) {
  await loadMechanisms({ questions: questions.map(([, d]) => d) });
  const publicKey = hex(publicKeyHex), out = [];
  for (const [label, definition, answer] of questions) {
    const q = new Question(definition, 0), value = q.checkAnswer(answer);
    const survey = { id: "bench", questions: [q] }, size = sealing.unitSize(survey, q.id);
    const report = () => ({ id: crypto.randomUUID(), question: q.id, payload: q.oracle.encode(q.oracle.randomize(value)) });
    const sealOne = () => sealing.seal(publicKey, { surveyId: "bench", unit: q.id, plaintext: sealing.unitBody([report()], q.id), size });
    for (let i = 0; i < 200; i++) await sealOne(); // warm up
    const bare = await timed(seconds, async () => { for (let i = 0; i < 1000; i++) report(); return 1000; });
    const sequential = await timed(seconds, async () => { await sealOne(); return 1; });
    const concurrent = await timed(seconds, async () => { await Promise.all(Array.from({ length: inFlight }, sealOne)); return inFlight; });
    out.push({ label, bytes: sealing.sealedLength(size), bare, sequential, concurrent, inFlight });
  }
  return out;
}

/**
 * The floor under any seal: HPKE's X25519 alone (a fresh pair, its public half exported, one
 * DH), as sealing.js calls it, with `inFlight` at once; no KDF, no AEAD, no report.
 */
export async function x25519(seconds = 1, inFlight = 32) {
  const subtle = crypto.subtle, recipient = (await subtle.generateKey({ name: "X25519" }, true, ["deriveBits"])).publicKey;
  const kem = async () => {
    const pair = await subtle.generateKey({ name: "X25519" }, false, ["deriveBits"]);
    await Promise.all([subtle.exportKey("raw", pair.publicKey), subtle.deriveBits({ name: "X25519", public: recipient }, pair.privateKey, 256)]);
  };
  for (let i = 0; i < 200; i++) await kem(); // warm up
  return timed(seconds, async () => { await Promise.all(Array.from({ length: inFlight }, kem)); return inFlight; });
}

/** randomize + encode + seal of one question alone, `inFlight` at once (the caller measures CPU time around it). */
export async function sealLoop([, definition, answer], publicKeyHex, seconds = 1, inFlight = 32) {
  await loadMechanisms({ questions: [definition] });
  const q = new Question(definition, 0), value = q.checkAnswer(answer), publicKey = hex(publicKeyHex);
  const size = sealing.unitSize({ id: "bench", questions: [q] }, q.id);
  const sealOne = () => sealing.seal(publicKey, { surveyId: "bench", unit: q.id, size,
    plaintext: sealing.unitBody([{ id: crypto.randomUUID(), question: q.id, payload: q.oracle.encode(q.oracle.randomize(value)) }], q.id) });
  return timed(seconds, async () => { await Promise.all(Array.from({ length: inFlight }, sealOne)); return inFlight; }); // run() warmed up
}

/**
 * sealLoop in `workers` dedicated module workers at once (the browser: each worker a thread of
 * its own), after a short warm-up in each: {perSecond} summed over the workers, {count}.
 */
export async function inWorkers(first, publicKeyHex, seconds = 1, workers = 2) {
  const results = await Promise.all(Array.from({ length: workers }, () => new Promise((resolve, reject) => {
    const worker = new Worker(import.meta.url, { type: "module" });
    worker.onmessage = ({ data }) => { worker.terminate(); resolve(data); };
    worker.onerror = (event) => { worker.terminate(); reject(new Error(event.message)); };
    worker.postMessage([first, publicKeyHex, seconds]);
  })));
  return { workers, count: results.reduce((n, r) => n + r.count, 0), perSecond: results.reduce((n, r) => n + r.perSecond, 0) };
}
if (typeof WorkerGlobalScope !== "undefined") {
  globalThis.onmessage = async ({ data: [first, key, seconds] }) => {
    await sealLoop(first, key, Math.min(seconds, 0.3)); // warm up
    postMessage(await sealLoop(first, key, seconds));
  };
}

if (typeof process !== "undefined" && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  const { readFileSync } = await import("node:fs");
  const { questions, public_key: key } = JSON.parse(readFileSync(0, "utf8"));
  for (const line of await run(questions, key, Number(process.argv[2] ?? 1))) console.log(JSON.stringify(line));
  console.log(JSON.stringify({ x25519: await x25519(Number(process.argv[2] ?? 1)) }));
}
