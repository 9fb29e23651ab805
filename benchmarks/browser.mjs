// JS randomize+encode throughput per mechanism in Node (CSPRNG: crypto.getRandomValues),
// printed as JSON lines for benchmarks/browser.py. Parameters come from Python-resolved
// questions passed on stdin (the same /2 definitions the aggregator signs).
import { readFileSync } from "node:fs";
import { Question, loadMechanisms } from "../client/browser/survey.js";

const questions = JSON.parse(readFileSync(0, "utf8"));
await loadMechanisms({ questions: questions.map(([, definition]) => definition) });
const seconds = Number(process.argv[2] ?? 0.5);
for (const [label, definition, answer] of questions) {
  const q = new Question(definition, 0);
  const value = q.checkAnswer(answer);
  const oracle = q.oracle;
  let count = 0;
  for (let i = 0; i < 2000; i++) oracle.encode(oracle.randomize(value)); // warm up
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < seconds * 1000) {
    for (let i = 0; i < 1000; i++) oracle.encode(oracle.randomize(value));
    count += 1000;
    elapsed = performance.now() - start;
  }
  console.log(
    JSON.stringify({
      label,
      perSecond: (count / elapsed) * 1000,
      microseconds: (elapsed * 1000) / count,
    }),
  );
}
