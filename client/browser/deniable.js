// The Deniable browser client: fetch a signed survey, check it, randomize the answers in the page,
// deliver them once. Mirrors client/session.py; the protocol is docs/protocol.md, the order of
// operations and why: README.md. No side channel: every request depends only on the survey.

import { canonicalBytes } from "./jcs.js";
import { b64decode, b64encode, followRotation, keyId, verify } from "./keychain.js";
import { AlreadyAnswered, ArraySource, BudgetExceeded, InvalidSurvey, PolicyViolation, SignatureError, TransportError } from "./randomness.js";
import { TOLERANCE, parseDefinition } from "./survey.js";

export * from "./randomness.js";
export { canonicalBytes, canonicalize } from "./jcs.js";
export { parseDefinition } from "./survey.js";

export const ENROLMENT_HEADER = "X-Deniable-Enrolment";
const STATE_KEY = "deniable.state/1", DAY = 86400000;

export const DEFAULT_POLICY = Object.freeze({
  maxQuestionEpsilon: 4, maxSurveyEpsilon: 10, lifetimeEpsilon: 100, periodEpsilon: 25, periodDays: 30,
  allowedMechanisms: ["binary_rr", "grr", "sue", "oue", "olh", "hrr", "subset", "option_sampling", "duchi", "discrete_laplace"],
  allowLongitudinal: true,
});

/** An in-memory Storage (tests, or pages that must not persist anything). */
export class MemoryStorage {
  items = new Map();
  getItem(key) { return this.items.get(key) ?? null; }
  setItem(key, value) { this.items.set(key, String(value)); }
  removeItem(key) { this.items.delete(key); }
}

const encode = (text) => new TextEncoder().encode(text);
const concat = (...parts) => Uint8Array.from(parts.flatMap((part) => [...part]));

async function hmac(key, message) {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, message));
}

/** A longitudinal question's permanent response to `value`, from HMAC-SHA256 in counter mode under
 * the device secret (drawn once per value, remembered), and the opaque tag the ledger keeps. */
async function memoized(secret, q, value) {
  const info = canonicalBytes([q.longitudinal.key, q.labels, q.epsilon, q.longitudinal.instantaneous_epsilon, value]);
  const tag = b64encode(await hmac(await hmac(secret, encode("deniable.client.memo/tag/1")), info));
  const subkey = await hmac(secret, encode("deniable.client.memo/permanent/1"));
  for (let blocks = 4; ; blocks *= 2) {
    const stream = [];
    for (let counter = 0n; counter < blocks; counter++) {
      const c = new Uint8Array(8);
      new DataView(c.buffer).setBigUint64(0, counter);
      stream.push(await hmac(subkey, concat(info, c)));
    }
    try {
      return { permanent: q.oracle.permanentResponse(value, new ArraySource(concat(...stream))), tag };
    } catch (error) {
      if (!(error instanceof RangeError)) throw error; // the stream ran out: more blocks, same prefix
    }
  }
}

export class SurveyClient {
  /**
   * @param {string} baseUrl the aggregator, e.g. "https://survey.example.org" ("" = this origin)
   * @param {object} options publicKey (base64 Ed25519, pinned), storage, policy, fetch, trustOnFirstUse, clock
   */
  constructor(baseUrl, { publicKey, storage, policy = {}, fetch, trustOnFirstUse = false, clock = Date.now } = {}) {
    this.baseUrl = String(baseUrl).replace(/\/+$/, "");
    if (publicKey === undefined && !trustOnFirstUse) throw new SignatureError("publicKey is required (pin the aggregator key in the embed code)");
    this.publicKey = publicKey === undefined ? undefined : b64decode(publicKey);
    if (this.publicKey && this.publicKey.length !== 32) throw new SignatureError("an Ed25519 public key is 32 bytes");
    Object.assign(this, { storage: storage ?? globalThis.localStorage, policy: { ...DEFAULT_POLICY, ...policy }, fetch: fetch ?? globalThis.fetch.bind(globalThis), clock });
  }

  load() { return JSON.parse(this.storage.getItem(STATE_KEY) ?? '{"ledger":[],"answered":{},"outbox":[],"memo":{},"keys":{}}'); }
  save(state) { this.storage.setItem(STATE_KEY, JSON.stringify(state)); }

  async request(method, path, body, enrolment) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (enrolment !== undefined) headers[ENROLMENT_HEADER] = enrolment;
    try {
      return await this.fetch(this.baseUrl + path, { method, headers, body, credentials: "omit", redirect: "error", cache: "no-store" });
    } catch (error) {
      throw new TransportError(`aggregator at ${this.baseUrl || "this origin"} unreachable (${error.message})`);
    }
  }

  /** The pin {key, sequence, retired}: stored (if it descends from the given key), given, or on first use. */
  async pin() {
    const stored = this.load().keys[this.baseUrl], given = this.publicKey;
    if (stored?.key) {
      const pin = { ...stored, key: b64decode(stored.key) };
      if (!given || stored.key === b64encode(given) || pin.retired.includes(await keyId(given))) return pin;
    }
    if (given) return { key: given, sequence: null, retired: [] };
    // Trust on first use (only when asked for): the served key, after the document's checks.
    const document = await (await this.request("GET", "/api/v1/key")).json();
    return this.savePin({ ...await followRotation({ key: b64decode(document.public_key), sequence: null, retired: [] }, document), sequence: document.sequence });
  }

  savePin(pin) {
    const state = this.load();
    state.keys[this.baseUrl] = { ...pin, key: b64encode(pin.key) };
    this.save(state);
    return pin;
  }

  /** The verified survey, or a typed error; nothing is posted either way. */
  async fetchSurvey(surveyId) {
    if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(surveyId)) throw new InvalidSurvey(`not a survey id: ${surveyId}`);
    let pin = await this.pin();
    const response = await this.request("GET", `/api/v1/surveys/${surveyId}`);
    if (response.status !== 200) throw new TransportError(`aggregator answered ${response.status} to GET survey ${surveyId}`, response.status);
    const document = await response.json();
    if (typeof document.key_id === "string" && document.key_id !== await keyId(pin.key)) {
      // Signed by another key: follow the aggregator's signed rotation chain, or refuse.
      pin = this.savePin(await followRotation(pin, await (await this.request("GET", "/api/v1/key")).json()));
    }
    let signature;
    try { signature = b64decode(document.signature); } catch { throw new SignatureError("survey signature is not base64"); }
    if (!(await verify(pin.key, signature, canonicalBytes(document.definition)))) throw new SignatureError(`survey ${surveyId}: the signature does not verify under the pinned key`);
    const survey = parseDefinition(document.definition), p = this.policy;
    if (survey.id !== surveyId) throw new InvalidSurvey(`asked for survey ${surveyId}, got ${survey.id}`);
    for (const q of survey.questions) {
      const refuse = (why) => { throw new PolicyViolation(`question ${q.id}: ${why}`); };
      if (!p.allowedMechanisms.includes(q.mechanism)) refuse(`mechanism ${q.mechanism} is not allowed`);
      if (q.longitudinal && !p.allowLongitudinal) refuse("longitudinal questions are not allowed");
      if (q.cost > p.maxQuestionEpsilon + TOLERANCE) refuse(`asks epsilon = ${q.cost}, over the cap of ${p.maxQuestionEpsilon} per question`);
    }
    if (survey.totalEpsilon > p.maxSurveyEpsilon + TOLERANCE) throw new PolicyViolation(`survey ${survey.id}: asks epsilon = ${survey.totalEpsilon} in total, over the cap of ${p.maxSurveyEpsilon}`);
    if (document.status !== "open") throw new TransportError(`survey ${surveyId} is closed`, 409);
    this.checkBudget(this.load(), survey, survey.totalEpsilon); // the worst case: every longitudinal value new
    return { ...survey, definition: document.definition, requireEnrolment: Boolean(document.require_enrolment) };
  }

  /** Refuses a survey already answered on this device, or a charge over the lifetime or period cap. */
  checkBudget(state, survey, amount) {
    const { total, period } = this.spent(state), p = this.policy;
    if (state.answered[`${this.baseUrl}#${survey.id}`]) throw new AlreadyAnswered(`survey ${survey.id} was already answered on this device`);
    if (total + amount > p.lifetimeEpsilon + TOLERANCE) throw new BudgetExceeded(`survey ${survey.id} would exceed this device's lifetime epsilon cap`);
    if (period + amount > p.periodEpsilon + TOLERANCE) throw new BudgetExceeded(`survey ${survey.id} would exceed this device's epsilon cap for the period`);
  }

  spent(state) {
    const start = this.clock() - this.policy.periodDays * DAY;
    return state.ledger.reduce((s, e) => ({ total: s.total + e.epsilon, period: s.period + (e.at > start ? e.epsilon : 0) }), { total: 0, period: 0 });
  }

  /**
   * Randomize, charge, queue and send. `confirm(reports)` may show the noisy values (each report:
   * {id, question, payload, description, epsilon}) and return false to send nothing.
   */
  async answer(survey, answers, { confirm, enrolmentToken } = {}) {
    const checked = survey.questions.map((q) => q.checkAnswer(answers[q.id]));
    const extra = Object.keys(answers).find((k) => !survey.questions.some((q) => q.id === k));
    if (extra !== undefined) throw new InvalidSurvey(`no question ${extra} in survey ${survey.id}`);
    let state = this.load();
    if (!state.secret) { state.secret = b64encode(crypto.getRandomValues(new Uint8Array(32))); this.save(state); }
    const reports = [], tags = [];
    for (const [i, q] of survey.questions.entries()) {
      let report, epsilon = q.cost;
      if (q.longitudinal) {
        const memo = await memoized(b64decode(state.secret), q, checked[i]);
        report = q.oracle.randomize(checked[i], undefined, memo.permanent);
        if (state.memo[memo.tag] || tags.includes(memo.tag)) epsilon = 0; // post-processing of a remembered response
        else tags.push(memo.tag);
      } else {
        report = q.oracle.randomize(checked[i]); // the CSPRNG: crypto.getRandomValues
      }
      reports.push({ id: crypto.randomUUID(), question: q.id, payload: q.oracle.encode(report), description: q.describe(report), epsilon });
    }
    if (confirm && !(await confirm(reports))) return { survey: survey.id, reportIds: [], epsilonCharged: 0, delivered: false, cancelled: true };
    state = this.load(); // another tab may have answered meanwhile
    const charged = reports.reduce((n, r) => n + r.epsilon, 0), now = this.clock(), answered = `${this.baseUrl}#${survey.id}`;
    this.checkBudget(state, survey, charged);
    const body = JSON.stringify({ reports: reports.map(({ id, question, payload }) => ({ id, question, payload })) });
    for (const r of reports) state.ledger.push({ at: now, survey: answered, question: r.question, epsilon: r.epsilon });
    for (const tag of tags) state.memo[tag] = { at: now };
    state.answered[answered] = { at: now, reports: reports.map((r) => r.id) };
    const entry = { origin: this.baseUrl, survey: survey.id, path: `/api/v1/surveys/${survey.id}/reports`, body };
    if (enrolmentToken !== undefined) entry.enrolment = enrolmentToken;
    state.outbox.push(entry);
    this.save(state); // the charge, the mark and the batch in one write, before any byte is sent
    const { pending } = await this.flush();
    return { survey: survey.id, reportIds: state.answered[answered].reports, epsilonCharged: charged, delivered: !this.load().outbox.some((e) => e.body === body), pendingBatches: pending };
  }

  /** Deliver this aggregator's outbox, oldest first, each batch with its identical body; stop at the
   * first unreachable try (or 429, 5xx). A batch leaves on 200/201 or a final refusal (other 4xx). */
  async flush() {
    let delivered = 0, refused;
    const mine = () => this.load().outbox.filter((e) => e.origin === this.baseUrl);
    for (const entry of mine()) {
      let response;
      try {
        response = await this.request("POST", entry.path, entry.body, entry.enrolment);
      } catch (error) {
        if (error instanceof TransportError) break; // still unreachable: keep it, in order
        throw error;
      }
      if (response.status === 429 || response.status >= 500) break;
      if (response.status === 200 || response.status === 201) delivered++;
      else refused ??= new TransportError(`aggregator refused the reports (${response.status})`, response.status);
      const state = this.load();
      state.outbox = state.outbox.filter((e) => e.body !== entry.body);
      this.save(state);
    }
    if (refused) throw refused;
    return { delivered, pending: mine().length };
  }

  /** ε spent and remaining on this device. */
  budget() {
    const { total, period } = this.spent(this.load());
    return { spentTotal: total, spentPeriod: period, remainingLifetime: this.policy.lifetimeEpsilon - total, remainingPeriod: this.policy.periodEpsilon - period };
  }
}
