// A black-box privacy audit of JS randomizers: a rigorous lower bound on ε from samples.
// The same procedure as tests/shared/audit.py: split each sample (selection / evaluation),
// choose events by smoothed empirical ratio on the selection half, bound their probabilities
// on the evaluation half with exact one-sided Clopper–Pearson bounds, and report the largest
// certified log-ratio. All 4·len(thresholds) bounds hold at once with probability >= 1 -
// falseAlarm (union bound), so an ε-DP mechanism certifies more than ε with probability <=
// falseAlarm.

export const LOG_THRESHOLDS = [0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3];

function logGamma(x) {
  // Lanczos (g = 7, n = 9), accurate to ~1e-15 relative for x > 0.
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  x -= 1;
  let a = c[0];
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += c[i] / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

function betaFraction(x, a, b) {
  // Continued fraction of the incomplete beta function (modified Lentz).
  const tiny = 1e-300;
  let c = 1,
    d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 10000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b). */
export function betaRegularized(x, a, b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(
    logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x),
  );
  if (x < (a + 1) / (a + b + 2)) return (front * betaFraction(x, a, b)) / a;
  return 1 - (front * betaFraction(1 - x, b, a)) / b;
}

function solve(f, target) {
  // f increasing on [0, 1]: the x with f(x) = target, by bisection (60 halvings).
  let lo = 0,
    hi = 1;
  for (let i = 0; i < 200 && hi - lo > 1e-17 * Math.max(lo, 1e-300); i++) {
    const mid = lo + (hi - lo) / 2;
    if (mid === lo || mid === hi) break;
    if (f(mid) < target) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** One-sided exact lower bound: P[p < bound] <= alpha. */
export function clopperPearsonLower(successes, trials, alpha) {
  if (successes === 0) return 0;
  // P[Bin(n, p) >= k] = I_p(k, n - k + 1) = alpha
  return solve((p) => betaRegularized(p, successes, trials - successes + 1), alpha);
}

/** One-sided exact upper bound: P[p > bound] <= alpha. */
export function clopperPearsonUpper(successes, trials, alpha) {
  if (successes === trials) return 1;
  // P[Bin(n, p) <= k] = alpha  <=>  I_{1-p}(n - k, k + 1) = alpha
  return 1 - solve((q) => betaRegularized(q, trials - successes, successes + 1), alpha);
}

function count(keys, from, to) {
  const counts = new Map();
  for (let i = from; i < to; i++) counts.set(keys[i], (counts.get(keys[i]) ?? 0) + 1);
  return counts;
}

/** The largest certified log-ratio of an event between two samples of keys. */
export function epsilonLowerBound(
  keysX,
  keysY,
  { falseAlarm = 1e-6, selectionFraction = 0.25, logThresholds = LOG_THRESHOLDS } = {},
) {
  const splitX = Math.floor(keysX.length * selectionFraction),
    splitY = Math.floor(keysY.length * selectionFraction);
  const select = { x: count(keysX, 0, splitX), y: count(keysY, 0, splitY) };
  const held = { x: count(keysX, splitX, keysX.length), y: count(keysY, splitY, keysY.length) };
  const sizes = { x: splitX, y: splitY },
    nHeld = { x: keysX.length - splitX, y: keysY.length - splitY };
  const alpha = falseAlarm / (4 * logThresholds.length);
  let best = { epsilon: -Infinity };
  for (const [favoured, other] of [
    ["x", "y"],
    ["y", "x"],
  ]) {
    for (const tau of logThresholds) {
      const factor = Math.exp(tau);
      let hitsFavoured = 0,
        hitsOther = 0;
      for (const [key, c] of select[favoured]) {
        if (
          (c + 0.5) / sizes[favoured] >=
          (factor * ((select[other].get(key) ?? 0) + 0.5)) / sizes[other]
        ) {
          hitsFavoured += held[favoured].get(key) ?? 0;
          hitsOther += held[other].get(key) ?? 0;
        }
      }
      const lower = clopperPearsonLower(hitsFavoured, nHeld[favoured], alpha);
      const upper = clopperPearsonUpper(hitsOther, nHeld[other], alpha);
      if (lower <= 0) continue;
      const bound = Math.log(lower / upper);
      if (bound > best.epsilon) best = { epsilon: bound, favoured, tau, lower, upper };
    }
  }
  return best;
}
