// The browser client (client/session.py; docs/protocol.md; the order, and why: README.md).

import { statuses } from "./conditions.js";
import { parseJson } from "./jcs.js";
import {
  AlreadyAnswered,
  BudgetExceeded,
  InvalidSurvey,
  InvalidValue,
  PolicyViolation,
  SignatureError,
  TransportError,
} from "./randomness.js";
import { b64decode, b64encode, keyId, verifyDocument } from "./signatures.js";
import { MECHANISMS, TOLERANCE, identifier, importSealed } from "./survey.js";

export * from "./randomness.js";
export { canonicalBytes, canonicalize, parseJson } from "./jcs.js";
export { loadMechanisms, parseDefinition, wording } from "./survey.js";
export { holds, statuses } from "./conditions.js";
export { b64decode, b64encode, keyDocument, keyId, verify, verifyDocument } from "./signatures.js";

/**
 * Every question's mechanism input, one per question on every path: the true answer; "declined"
 * (null or absent, optional questions only) or "not_applicable" (its show_if false on the true
 * earlier answers) as the extra value of its extended domain. An answer to a question not shown is
 * refused (a form drops them), so what leaves never depends on answers the respondent did not see.
 */
export function mechanismInputs(survey, answers) {
  return statuses(survey.questions, answers).map((status, i) => {
    const q = survey.questions[i],
      answer = answers[q.id];
    if (status === "hidden" && answer !== undefined && answer !== null)
      throw new InvalidValue(`question ${q.id} was not shown: it takes no answer`);
    if (status === "answered") return q.checkAnswer(answer);
    return q.extraValue(status === "declined" ? "declined" : "not_applicable");
  });
}

export const ENROLMENT_HEADER = "X-Deniable-Enrolment";
// A relay's answer to a resend whose enrolment token's submission it forwarded already.
const ALREADY_DELIVERED = "urn:deniable:problem:already-delivered";
// 409s after which the same reports are not sealed again to a newer key (client/transport.py's FINAL_CONFLICTS).
const FINAL_CONFLICTS = [ALREADY_DELIVERED, "urn:deniable:problem:survey-closed"];

/** A refusal's problem type (docs/api.md "Errors"): what a client acts on, never its detail. */
const problemType = async (response) =>
  (
    await response
      .clone()
      .json()
      .catch(() => null)
  )?.type;

/** A relay's 409 already-delivered (docs/protocol.md §11.2): a delivery, not a refusal (client/transport.py's accepted). */
const alreadyDelivered = async (response) =>
  response?.status === 409 && (await problemType(response)) === ALREADY_DELIVERED;
const STATE_KEY = "deniable.state/1";

export const DEFAULT_POLICY = Object.freeze({
  maxQuestionEpsilon: 4,
  maxSurveyEpsilon: 10,
  lifetimeEpsilon: 100,
  periodEpsilon: 25,
  periodDays: 30,
  allowedMechanisms: MECHANISMS,
  allowLongitudinal: true,
});

// Only for a rotated key or trust on first use.
const keychain = (client) => {
  if (client.modules && !client.modules.includes("keychain.js"))
    throw new SignatureError("keychain.js is not pinned by this page");
  return import("./keychain.js");
};
// Only for a relayed survey (its signed definition names a relay): sealed.js, which imports sealing.js.
const sealed = (client) => importSealed(client.modules);

export class MemoryStorage {
  items = new Map();
  getItem(key) {
    return this.items.get(key) ?? null;
  }
  setItem(key, value) {
    this.items.set(key, String(value));
  }
  removeItem(key) {
    this.items.delete(key);
  }
}

export class SurveyClient {
  constructor(
    baseUrl,
    {
      publicKey,
      storage = globalThis.localStorage,
      policy,
      fetch = globalThis.fetch.bind(globalThis),
      trustOnFirstUse,
      clock = Date.now,
      modules,
      timeout = 30000,
    } = {},
  ) {
    this.publicKey = publicKey === undefined ? undefined : b64decode(publicKey);
    if (this.publicKey ? this.publicKey.length !== 32 : !trustOnFirstUse)
      throw new SignatureError(
        "publicKey must pin the aggregator's 32-byte Ed25519 key (from the embed code)",
      );
    Object.assign(this, {
      baseUrl: String(baseUrl).replace(/\/+$/, ""),
      storage,
      policy: { ...DEFAULT_POLICY, ...policy },
      fetch,
      clock,
      modules,
      timeout,
      drafts: new WeakMap(),
    });
  }

  load() {
    return JSON.parse(
      this.storage.getItem(STATE_KEY) ??
        '{"ledger":[],"answered":{},"outbox":[],"memo":{},"keys":{}}',
    );
  }
  save(state) {
    this.storage.setItem(STATE_KEY, JSON.stringify(state));
  }

  /** `url`: an absolute URL instead of baseUrl + path (a relayed survey's relay). */
  async request(method, path, body, enrolment, url) {
    const headers = {
      Accept: "application/json",
      ...(body && { "Content-Type": "application/json" }),
      ...(enrolment !== undefined && { [ENROLMENT_HEADER]: enrolment }),
    };
    try {
      // Why a timeout: flushes run in turn, so one request the aggregator never answers would
      // hold back every later batch.
      return await this.fetch(url ?? this.baseUrl + path, {
        method,
        headers,
        body,
        credentials: "omit",
        redirect: "error",
        cache: "no-store",
        signal: AbortSignal.timeout(this.timeout),
      });
    } catch (error) {
      throw new TransportError(`${url ? "relay" : "aggregator"} unreachable (${error.message})`);
    }
  }

  /** The pin {key, sequence, retired}: stored (if it descends from the given key), given, or first used. */
  async pin() {
    const stored = this.load().keys[this.baseUrl],
      given = this.publicKey;
    if (
      stored?.key &&
      (!given || stored.key === b64encode(given) || stored.retired.includes(await keyId(given)))
    )
      return { ...stored, key: b64decode(stored.key) };
    return given
      ? { key: given, sequence: null, retired: [] }
      : (await keychain(this)).trustOnFirstUse(this);
  }

  /** The verified survey, or a typed error; nothing is posted. */
  async fetchSurvey(surveyId) {
    identifier("survey id", surveyId);
    let pin = await this.pin();
    const response = await this.request("GET", `/api/v1/surveys/${surveyId}`),
      p = this.policy;
    if (response.status !== 200)
      throw new TransportError(
        `aggregator answered ${response.status} to GET survey ${surveyId}`,
        response.status,
      );
    const text = await response.text();
    let document;
    try {
      document = parseJson(text);
    } catch (error) {
      if (error instanceof InvalidSurvey) throw error; // a member twice
      throw new TransportError(`aggregator sent a survey ${surveyId} that is not JSON`, 200);
    }
    if (document?.key_id !== undefined && document.key_id !== (await keyId(pin.key)))
      pin = await (await keychain(this)).rotate(this, pin);
    const { definition, survey } = await verifyDocument(document, surveyId, pin.key, this.modules);
    for (const q of survey.questions) {
      const why = !p.allowedMechanisms.includes(q.mechanism)
        ? `mechanism ${q.mechanism} is not allowed`
        : q.longitudinal && !p.allowLongitudinal
          ? "longitudinal questions are not allowed"
          : q.cost > p.maxQuestionEpsilon + TOLERANCE &&
            `epsilon = ${q.cost} is over the cap of ${p.maxQuestionEpsilon} per question`;
      if (why) throw new PolicyViolation(`question ${q.id}: ${why}`);
    }
    if (survey.totalEpsilon > p.maxSurveyEpsilon + TOLERANCE)
      throw new PolicyViolation(
        `epsilon = ${survey.totalEpsilon} is over the cap of ${p.maxSurveyEpsilon} per survey`,
      );
    if (document.status !== "open") throw new TransportError(`survey ${surveyId} is closed`, 409);
    // A relayed survey: the encryption key its reports are sealed to, checked now, before answering.
    const encryption = survey.relay
      ? await (
          await sealed(this)
        ).encryptionKey(this, pin, async (p) => (await keychain(this)).rotate(this, p))
      : undefined;
    if (encryption && b64encode(encryption.pin.key) !== b64encode(pin.key))
      throw new SignatureError(
        "the aggregator key changed while fetching the survey; fetch it again",
      );
    // "Answered" follows the aggregator's key (current and retired), not the spelling of its URL.
    const keyIds = [await keyId(pin.key), ...pin.retired],
      state = this.load(),
      costs = this.charges(state, survey, await this.families(survey, state));
    const verified = {
      ...survey,
      definition,
      requireEnrolment: Boolean(document.require_enrolment),
      keyIds,
      ...(encryption && { encryption: { key: encryption.key, keyId: encryption.keyId } }),
    };
    this.checkBudget(
      state,
      verified,
      costs.reduce((n, c) => n + c, 0),
    );
    return verified;
  }

  /** Each longitudinal question's memo family tag (null: not longitudinal, or no device secret yet). */
  families(survey, state) {
    return Promise.all(
      survey.questions.map((q) =>
        q.longitudinal && state.secret ? q.oracle.family(b64decode(state.secret), q) : null,
      ),
    );
  }

  /**
   * What answering charges per question, whatever the answers: a longitudinal question costs its ε
   * for the first d answers of its memo family, then 0 (at most d values, each memoized: RAPPOR).
   * Why not per new value: a charge that depends on the answers makes refusals reveal them.
   */
  charges(state, survey, families) {
    return survey.questions.map((q, i) =>
      families[i] && state.memo[families[i]]?.count >= q.domainSize ? 0 : q.cost,
    );
  }

  checkBudget(state, survey, amount) {
    const { spentTotal, spentPeriod } = this.budget(state),
      p = this.policy,
      surveyId = survey.id;
    const marks = [...survey.keyIds, this.baseUrl].map((k) => `${k}#${surveyId}`); // the URL: marks of earlier versions
    if (marks.some((mark) => state.answered[mark]))
      throw new AlreadyAnswered(`survey ${surveyId} was already answered on this device`);
    const over =
      spentTotal + amount > p.lifetimeEpsilon + TOLERANCE
        ? "its lifetime"
        : spentPeriod + amount > p.periodEpsilon + TOLERANCE && "the period";
    if (over)
      throw new BudgetExceeded(
        `survey ${surveyId} would exceed this device's epsilon cap for ${over}`,
      );
  }

  /** Randomize, charge, queue, send; `confirm(reports)` may show the noisy values, false: send nothing. */
  async answer(survey, answers, { confirm, enrolmentToken } = {}) {
    const extra = Object.keys(answers).find((k) => !survey.questions.some((q) => q.id === k));
    if (extra !== undefined) throw new InvalidSurvey(`no question ${extra} in survey ${survey.id}`);
    const checked = mechanismInputs(survey, answers);
    let state = this.load();
    if (!state.secret) {
      state.secret = b64encode(crypto.getRandomValues(new Uint8Array(32)));
      this.save(state);
    }
    const reports = [],
      secret = b64decode(state.secret),
      families = await this.families(survey, state),
      costs = this.charges(state, survey, families);
    for (const [i, q] of survey.questions.entries()) {
      // Why kept: `confirm` shows the noisy values and may cancel. Asked again with the same answer,
      // the page shows (and sends) the same report, so re-randomizing until the noise looks right
      // cannot make what is sent depend on the answer beyond the mechanism (in memory only). Kept
      // per question object: another fetch of the survey, perhaps another definition, draws anew.
      const drafts = this.drafts.get(q) ?? this.drafts.set(q, new Map()).get(q),
        draft = JSON.stringify(checked[i]);
      // A longitudinal answer re-randomizes its memoized permanent response (post-processing).
      const report =
        drafts.get(draft) ??
        (q.longitudinal
          ? q.oracle.randomize(
              checked[i],
              undefined,
              await q.oracle.permanentFor(secret, q, checked[i]),
            )
          : q.oracle.randomize(checked[i]));
      drafts.set(draft, report);
      reports.push({
        id: crypto.randomUUID(),
        question: q.id,
        payload: q.oracle.encode(report),
        description: q.describe(report),
        epsilon: costs[i],
      });
    }
    if (confirm && !(await confirm(reports)))
      return {
        survey: survey.id,
        reportIds: [],
        epsilonCharged: 0,
        delivered: false,
        cancelled: true,
      };
    // Sealed before the state is read (WebCrypto is asynchronous): the read, the checks and the
    // write below stay one synchronous step, which another tab cannot interleave.
    const wire = reports.map(({ id, question, payload }) => ({ id, question, payload }));
    const body = survey.relay
      ? await (await sealed(this)).sealedBody(survey, wire, enrolmentToken)
      : JSON.stringify({ reports: wire });
    // A relayed batch keeps its wire reports (until delivered) to reseal them once, unchanged, if the
    // relay refuses the encryption key as stale (409; #send).
    const reseal = survey.relay ? (await sealed(this)).resealData(survey, wire) : undefined;
    state = this.load(); // another tab may have answered meanwhile
    const at = this.clock(),
      answered = `${survey.keyIds[0]}#${survey.id}`,
      reportIds = reports.map((r) => r.id);
    const charges = this.charges(state, survey, families),
      charged = charges.reduce((n, c) => n + c, 0);
    this.checkBudget(state, survey, charged);
    survey.questions.forEach((q, i) => {
      state.ledger.push({ at, survey: answered, question: q.id, epsilon: charges[i] });
      if (families[i])
        state.memo[families[i]] = {
          at,
          count: Math.min(q.domainSize, (state.memo[families[i]]?.count ?? 0) + 1),
        };
    });
    state.answered[answered] = { at, reports: reportIds };
    state.outbox.push(
      survey.relay // to the relay only; the token is in the body
        ? {
            origin: this.baseUrl,
            survey: survey.id,
            url: `${survey.relay.url}/api/v1/surveys/${survey.id}/sealed`,
            path: `/api/v1/surveys/${survey.id}/sealed`,
            body,
            reseal,
          }
        : {
            origin: this.baseUrl,
            survey: survey.id,
            path: `/api/v1/surveys/${survey.id}/reports`,
            body,
            enrolment: enrolmentToken,
          },
    );
    this.save(state); // the charge, the mark and the batch in one write, before any byte is sent
    // Another batch's refusal (an earlier visit's) does not fail this answer.
    const { pending, retryAfter } = await this.flush().catch((error) => {
      if (!error.result || error.bodies.includes(body)) throw error;
      return error.result;
    });
    return {
      survey: survey.id,
      reportIds,
      epsilonCharged: charged,
      delivered: !this.load().outbox.some((e) => e.body === body || e.queued === body),
      pendingBatches: pending,
      ...(retryAfter !== undefined && { retryAfter }),
    };
  }

  /**
   * Sends the outbox in order, identical bodies; a batch leaves on 200/201/202, a relay's 409
   * already-delivered, or a final 4xx. On a
   * network error, 429 or 5xx the rest waits; `retryAfter`: the seconds a Retry-After asked for.
   * A batch whose enrolment token is refused (401, 403) waits, unsent, until `flush({ enrolmentToken,
   * survey })` gives another (`waiting`): it is charged and marked answered, so it is never lost.
   * Flushes of one client run one after another, so none posts a batch another is sending.
   */
  flush(options) {
    return (this.flushing = (this.flushing ?? Promise.resolve())
      .catch(() => {})
      .then(() => this.#send(options)));
  }

  /** Applies `change` to the stored outbox entry whose body is `body` (or removes it: change null). */
  #update(body, change) {
    const state = this.load();
    state.outbox = state.outbox.flatMap((e) => (e.body !== body ? [e] : change ? [change(e)] : []));
    this.save(state);
  }

  async #send({ enrolmentToken, survey } = {}) {
    // Why one survey: one token on several surveys' batches would link them.
    if (enrolmentToken !== undefined && survey === undefined)
      throw new TypeError("flush({ enrolmentToken }) needs the survey the token is for");
    let delivered = 0,
      refused,
      retryAfter;
    const bodies = [],
      surveys = [];
    const mine = () => this.load().outbox.filter((e) => e.origin === this.baseUrl);
    for (const entry of mine()) {
      if (entry.refused) {
        if (enrolmentToken === undefined || entry.survey !== survey) continue; // waits for a token
        const before = entry.body;
        // A relayed batch: the token is the body's last member (sealed.js's relayBody), the sealed units unchanged.
        if (entry.url)
          entry.body = JSON.stringify({ ...JSON.parse(before), enrolment_token: enrolmentToken });
        else entry.enrolment = enrolmentToken; // kept with the batch, for every later retry
        this.#update(before, (e) => ({
          ...e,
          body: entry.body,
          enrolment: entry.enrolment,
          refused: undefined,
        }));
      }
      let response = await this.request(
          "POST",
          entry.path,
          entry.body,
          entry.enrolment,
          entry.url,
        ).catch(() => null),
        original;
      if (
        response?.status === 409 &&
        entry.url &&
        entry.reseal &&
        !entry.resealed &&
        !FINAL_CONFLICTS.includes(await problemType(response))
      ) {
        // The relay no longer takes the body's encryption key: verify the aggregator's current one
        // (following the pin's chain), seal the same reports to it, and try once more.
        const module = await sealed(this);
        let encryption;
        try {
          encryption = await module.encryptionKey(this, await this.pin(), async (p) =>
            (await keychain(this)).rotate(this, p),
          );
        } catch (error) {
          if (!(error instanceof SignatureError)) response = null; // the aggregator unreachable: kept for later, as the relay
        } // a key that does not verify: the refusal stands
        if (encryption) {
          original = entry.body;
          entry.body = await module.resealedBody(original, entry.survey, entry.reseal, encryption);
          this.#update(original, (e) => ({
            ...e,
            body: entry.body,
            resealed: true,
            queued: original,
          }));
          response = await this.request(
            "POST",
            entry.path,
            entry.body,
            entry.enrolment,
            entry.url,
          ).catch(() => null);
        }
      }
      if (!response || response.status === 429 || response.status >= 500) {
        // kept, in order, for later
        const wait = response?.headers.get("Retry-After"),
          seconds = /^\d+$/.test(wait) ? +wait : (Date.parse(wait) - this.clock()) / 1000;
        retryAfter = seconds >= 0 ? seconds : undefined;
        break;
      }
      const { status } = response,
        token = status === 401 || status === 403;
      // 202: a relay holds it; 409 already-delivered: a relay forwarded it (and forgot which units the token admitted)
      if (status === 200 || status === 201 || status === 202 || (await alreadyDelivered(response)))
        delivered = surveys.push(entry.survey);
      else {
        const who = entry.url ? "relay" : "aggregator";
        refused ??= new TransportError(
          token
            ? `${who} refused the enrolment token (${status}): the reports wait for another`
            : `${who} refused the reports (${status})`,
          status,
        );
        bodies.push(entry.body, ...(original ? [original] : [])); // the body answer() queued, too
      }
      this.#update(entry.body, token && ((e) => ({ ...e, refused: status })));
    }
    const left = mine(),
      waiting = left.filter((e) => e.refused).length;
    const result = {
      delivered,
      surveys,
      pending: left.length - waiting,
      ...(waiting && { waiting }),
      ...(retryAfter !== undefined && { retryAfter }),
    };
    if (refused) throw Object.assign(refused, { bodies, result }); // which batches, and the rest's outcome
    return result;
  }

  budget(state = this.load()) {
    const start = this.clock() - this.policy.periodDays * 86400000,
      p = this.policy;
    let total = 0,
      period = 0;
    for (const e of state.ledger) {
      total += e.epsilon;
      if (e.at > start) period += e.epsilon;
    }
    return {
      spentTotal: total,
      spentPeriod: period,
      remainingLifetime: p.lifetimeEpsilon - total,
      remainingPeriod: p.periodEpsilon - period,
    };
  }
}
