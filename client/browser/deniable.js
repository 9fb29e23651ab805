// The Deniable browser client: fetch a signed survey, check it, randomize answers in the page,
// deliver them once. Mirrors client/session.py; the protocol is docs/protocol.md.
//
// Order of operations, and why:
// 1. fetchSurvey: the aggregator's Ed25519 key is pinned by the embed code (publicKey; trust on
//    first use only if asked for). GET /api/v1/surveys/{id}; verify the signature over the RFC
//    8785 bytes of the definition with WebCrypto; validate it strictly (survey.js), including
//    the ε its thresholds imply; then the policy caps, the status, "already answered" and the
//    worst-case budget. Any failure throws and nothing is posted.
// 2. answer: every true answer is validated first; each is randomized with
//    crypto.getRandomValues (longitudinal questions: a memoized permanent response from the
//    device secret, then a fresh instantaneous one); each report gets crypto.randomUUID(). An
//    optional confirm(reports) callback shows the noisy values before anything is stored. The
//    ledger charge, the "answered" mark and the batch enter storage in one write, before any
//    byte is sent.
// 3. flush (also run by answer): POST each outbox batch; it leaves the outbox only when
//    acknowledged (201) or refused for good (4xx but 429). Retries resend the identical body
//    with the same report ids, which the aggregator stores once.
// No side channels: the request's path, headers, size and key order depend only on the survey.

import { canonicalBytes } from "./jcs.js";
import {
  AlreadyAnswered, BudgetExceeded, ByteStreamSource, DeniableError, InvalidSurvey, PolicyViolation,
  SignatureError, TransportError,
} from "./randomness.js";
import { followRotation, keyId } from "./keychain.js";
import { parseDefinition } from "./survey.js";

export * from "./randomness.js";
export { canonicalBytes, canonicalize } from "./jcs.js";
export { parseDefinition } from "./survey.js";

export const ENROLMENT_HEADER = "X-Deniable-Enrolment";
const STATE_KEY = "deniable.state/1";
const DAY = 86400000;
const TOLERANCE = 1e-9;

export const DEFAULT_POLICY = Object.freeze({
  maxQuestionEpsilon: 4, maxSurveyEpsilon: 10, lifetimeEpsilon: 100, periodEpsilon: 25, periodDays: 30,
  allowedMechanisms: ["binary_rr", "grr", "sue", "oue", "olh", "hrr", "subset", "option_sampling", "duchi", "discrete_laplace"],
  allowLongitudinal: true,
});

/** An in-memory Storage (tests, or pages that must not persist anything). */
export class MemoryStorage {
  constructor() { this.items = new Map(); }
  getItem(key) { return this.items.has(key) ? this.items.get(key) : null; }
  setItem(key, value) { this.items.set(key, String(value)); }
  removeItem(key) { this.items.delete(key); }
}

const base64 = {
  decode(textValue) {
    if (typeof textValue !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(textValue)) throw new SignatureError("not base64");
    return Uint8Array.from(atob(textValue), (c) => c.charCodeAt(0));
  },
  encode(bytes) { return btoa(String.fromCharCode(...bytes)); },
};

/** HMAC-SHA256 in counter mode under the device secret: the memoized permanent responses. */
class HmacStream extends ByteStreamSource {
  constructor(blocks) { super(); this.bytes = blocks; this.position = 0; }
  tokenBytes(count) {
    if (this.position + count > this.bytes.length) throw new RangeError("memo stream exhausted");
    return this.bytes.subarray(this.position, (this.position += count));
  }
}

async function hmac(keyBytes, message) {
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, message));
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) { out.set(p, offset); offset += p.length; }
  return out;
}

async function memoized(secret, question, value) {
  const info = canonicalBytes([question.longitudinal.key, question.options ?? ["no", "yes"], question.epsilon,
    question.longitudinal.instantaneous_epsilon, value]);
  const encoder = new TextEncoder();
  const tag = await hmac(await hmac(secret, encoder.encode("deniable.client.memo/tag/1")), info);
  const subkey = await hmac(secret, encoder.encode("deniable.client.memo/permanent/1"));
  for (let blocks = 4; ; blocks *= 2) {
    const parts = [];
    for (let counter = 0; counter < blocks; counter++) {
      const c = new Uint8Array(8);
      new DataView(c.buffer).setUint32(4, counter);
      parts.push(await hmac(subkey, concat(info, c)));
    }
    try {
      return { permanent: question.oracle.permanentResponse(value, new HmacStream(concat(...parts))), tag: base64.encode(tag) };
    } catch (error) {
      if (!(error instanceof RangeError)) throw error; // otherwise: more blocks, same prefix
    }
  }
}

export class SurveyClient {
  /**
   * @param {string} baseUrl the aggregator, e.g. "https://survey.example.org" ("" = this origin)
   * @param {object} options publicKey (base64 Ed25519, pinned), storage, policy, fetch, trustOnFirstUse
   */
  constructor(baseUrl, { publicKey, storage, policy = {}, fetch: fetcher, trustOnFirstUse = false, clock = Date.now } = {}) {
    this.baseUrl = String(baseUrl).replace(/\/+$/, "");
    if (publicKey === undefined && !trustOnFirstUse) throw new SignatureError("publicKey is required (pin the aggregator key in the embed code)");
    this.publicKey = publicKey === undefined ? undefined : base64.decode(publicKey);
    if (this.publicKey && this.publicKey.length !== 32) throw new SignatureError("an Ed25519 public key is 32 bytes");
    this.storage = storage ?? globalThis.localStorage;
    this.policy = { ...DEFAULT_POLICY, ...policy };
    this.fetch = fetcher ?? globalThis.fetch.bind(globalThis);
    this.clock = clock;
  }

  load() {
    const raw = this.storage.getItem(STATE_KEY);
    return raw ? JSON.parse(raw) : { ledger: [], answered: {}, outbox: [], memo: {}, keys: {} };
  }

  save(state) { this.storage.setItem(STATE_KEY, JSON.stringify(state)); }

  spent(state, now = this.clock()) {
    const start = now - this.policy.periodDays * DAY;
    let total = 0, period = 0;
    for (const e of state.ledger) { total += e.epsilon; if (e.at > start) period += e.epsilon; }
    return { total, period };
  }

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

  /** The pin {key, sequence, retired}: stored (if it descends from the given key), given, or TOFU. */
  async pin() {
    const stored = this.load().keys[this.baseUrl];
    if (stored && typeof stored === "object") {
      const pin = { key: base64.decode(stored.key), sequence: stored.sequence, retired: stored.retired };
      if (!this.publicKey || base64.encode(pin.key) === base64.encode(this.publicKey) || pin.retired.includes(await keyId(this.publicKey))) return pin;
    }
    if (this.publicKey) return { key: this.publicKey, sequence: null, retired: [] };
    const document = await (await this.request("GET", "/api/v1/key")).json();
    // Trust on first use (only when asked for): the served key, after the shape checks.
    const served = await followRotation({ key: base64.decode(document.public_key), sequence: null, retired: [] }, document);
    const pin = { ...served, sequence: document.sequence };
    this.savePin(pin);
    return pin;
  }

  savePin(pin) {
    const state = this.load();
    state.keys[this.baseUrl] = { key: base64.encode(pin.key), sequence: pin.sequence, retired: pin.retired };
    this.save(state);
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
      const keys = await this.request("GET", "/api/v1/key");
      pin = await followRotation(pin, await keys.json());
      this.savePin(pin);
    }
    const keyBytes = pin.key;
    let signature;
    try { signature = base64.decode(document.signature); } catch { throw new SignatureError("survey signature is not base64"); }
    const key = await crypto.subtle.importKey("raw", keyBytes, { name: "Ed25519" }, false, ["verify"]);
    let valid = false;
    try { valid = await crypto.subtle.verify({ name: "Ed25519" }, key, signature, canonicalBytes(document.definition)); } catch { valid = false; }
    if (!valid) throw new SignatureError(`survey ${surveyId}: the signature does not verify under the pinned key`);
    const survey = parseDefinition(document.definition);
    if (survey.id !== surveyId) throw new InvalidSurvey(`asked for survey ${surveyId}, got ${survey.id}`);
    this.checkPolicy(survey);
    if (document.status !== "open") throw new TransportError(`survey ${surveyId} is closed`, 409);
    const state = this.load();
    if (state.answered[this.answeredKey(survey.id)]) throw new AlreadyAnswered(`survey ${survey.id} was already answered on this device`);
    this.checkBudget(state, survey.totalEpsilon, `survey ${survey.id}`);
    return { ...survey, definition: document.definition, requireEnrolment: Boolean(document.require_enrolment) };
  }

  answeredKey(surveyId) { return `${this.baseUrl}#${surveyId}`; }

  checkPolicy(survey) {
    const p = this.policy;
    for (const q of survey.questions) {
      if (!p.allowedMechanisms.includes(q.mechanism)) throw new PolicyViolation(`question ${q.id}: mechanism ${q.mechanism} is not allowed`);
      if (q.longitudinal && !p.allowLongitudinal) throw new PolicyViolation(`question ${q.id}: longitudinal questions are not allowed`);
      if (q.cost > p.maxQuestionEpsilon + TOLERANCE) throw new PolicyViolation(`question ${q.id}: asks epsilon = ${q.cost}, over the cap of ${p.maxQuestionEpsilon} per question`);
    }
    if (survey.totalEpsilon > p.maxSurveyEpsilon + TOLERANCE) throw new PolicyViolation(`survey ${survey.id}: asks epsilon = ${survey.totalEpsilon} in total, over the cap of ${p.maxSurveyEpsilon}`);
  }

  checkBudget(state, amount, what) {
    const { total, period } = this.spent(state);
    if (total + amount > this.policy.lifetimeEpsilon + TOLERANCE) throw new BudgetExceeded(`${what} would exceed this device's lifetime epsilon cap`);
    if (period + amount > this.policy.periodEpsilon + TOLERANCE) throw new BudgetExceeded(`${what} would exceed this device's epsilon cap for the period`);
  }

  /**
   * Randomize, charge, queue and send. `confirm(reports)` may show the noisy values (each
   * report: {question, payload, description, epsilon}) and return false to send nothing.
   */
  async answer(survey, answers, { confirm, enrolmentToken } = {}) {
    const checked = survey.questions.map((q) => q.checkAnswer(answers[q.id]));
    const extra = Object.keys(answers).filter((k) => !survey.questions.some((q) => q.id === k));
    if (extra.length) throw new InvalidSurvey(`no question ${extra[0]} in survey ${survey.id}`);
    let state = this.load();
    if (!state.secret) { state.secret = base64.encode(crypto.getRandomValues(new Uint8Array(32))); this.save(state); }
    const secret = base64.decode(state.secret);
    const reports = [], charges = [], tags = [];
    for (const [i, q] of survey.questions.entries()) {
      let report, epsilon = q.cost;
      if (q.longitudinal) {
        const memo = await memoized(secret, q, checked[i]);
        report = q.oracle.randomize(checked[i], undefined, memo.permanent);
        if (state.memo[memo.tag] || tags.includes(memo.tag)) epsilon = 0;
        else tags.push(memo.tag);
      } else {
        report = q.oracle.randomize(checked[i]); // the CSPRNG: crypto.getRandomValues
      }
      reports.push({ id: crypto.randomUUID(), question: q.id, payload: q.oracle.encode(report), description: q.describe(report), epsilon });
      charges.push({ question: q.id, epsilon });
    }
    if (confirm && !(await confirm(reports))) return { survey: survey.id, reportIds: [], epsilonCharged: 0, delivered: false, cancelled: true };
    state = this.load(); // another tab may have answered meanwhile
    const answeredKey = this.answeredKey(survey.id);
    if (state.answered[answeredKey]) throw new AlreadyAnswered(`survey ${survey.id} was already answered on this device`);
    const charged = charges.reduce((n, c) => n + c.epsilon, 0);
    this.checkBudget(state, charged, `survey ${survey.id}`);
    const now = this.clock();
    const body = JSON.stringify({ reports: reports.map(({ id, question, payload }) => ({ id, question, payload })) });
    for (const c of charges) state.ledger.push({ at: now, survey: answeredKey, question: c.question, epsilon: c.epsilon });
    for (const tag of tags) state.memo[tag] = { at: now };
    const ids = reports.map((r) => r.id);
    state.answered[answeredKey] = { at: now, reports: ids };
    const entry = { origin: this.baseUrl, survey: survey.id, path: `/api/v1/surveys/${survey.id}/reports`, body };
    if (enrolmentToken !== undefined) entry.enrolment = enrolmentToken;
    state.outbox.push(entry);
    this.save(state); // charge, mark and batch in one write, before any byte is sent
    const result = await this.flush();
    const pending = this.load().outbox.some((e) => e.body === body);
    return { survey: survey.id, reportIds: ids, epsilonCharged: charged, delivered: !pending, pendingBatches: result.pending };
  }

  /** Deliver this aggregator's outbox, oldest first; stop at the first unreachable try. */
  async flush() {
    let delivered = 0, refused;
    for (const entry of this.load().outbox.filter((e) => e.origin === this.baseUrl)) {
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
    return { delivered, pending: this.load().outbox.filter((e) => e.origin === this.baseUrl).length };
  }

  /** ε spent and remaining on this device. */
  budget() {
    const { total, period } = this.spent(this.load());
    return { spentTotal: total, spentPeriod: period, remainingLifetime: this.policy.lifetimeEpsilon - total, remainingPeriod: this.policy.periodEpsilon - period };
  }
}

export { DeniableError };
