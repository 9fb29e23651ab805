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
  return { perSecond: (count / elapsed) * 1000, microseconds: (elapsed * 1000) / count, ...(used && { cpuMicroseconds: (used.user + used.system) / count }) };
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

if (typeof process !== "undefined" && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  const { readFileSync } = await import("node:fs");
  const { questions, public_key: key } = JSON.parse(readFileSync(0, "utf8"));
  for (const line of await run(questions, key, Number(process.argv[2] ?? 1))) console.log(JSON.stringify(line));
}
