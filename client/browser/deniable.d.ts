// Type declarations for deniable.js (the browser client; docs/protocol.md).

/** A true answer; null (or the id absent): declined, for an optional question that is shown. */
export type Answer = boolean | string | string[] | number | null;
export type Answers = Record<string, Answer>;

export interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface Policy {
  maxQuestionEpsilon: number;
  maxSurveyEpsilon: number;
  lifetimeEpsilon: number;
  periodEpsilon: number;
  periodDays: number;
  allowedMechanisms: string[];
  allowLongitudinal: boolean;
}

/**
 * A question's oracle (mechanism.js and one module per mechanism). Decoding a payload is the
 * aggregator's side: `decode(oracle, payload)` in wire.js (the report, or ReportError).
 */
export interface Mechanism {
  readonly name: string;
  readonly reportBytes: number;
  readonly epsilonImplemented: number;
  /** The value in mechanism terms, or InvalidValue. */
  checkValue(value: unknown): unknown;
  randomize(value: unknown, source?: ByteStreamSource): unknown;
  /** Lowercase hex, a fixed length per question. */
  encode(report: unknown): string;
  /** The report in plain words (labels: the question's options, or ["no", "yes"]). */
  describe(report: unknown, labels: string[]): string;
  /** The report in the respondent's words: the category labels and the form's phrases (respond.js). */
  words(report: unknown, say: ReportPhrases): string;
}

/** The phrases a mechanism words a report with (respond.js fills them from its catalogue). */
export interface ReportPhrases {
  labels: string[];
  yesNo(bit: number): string;
  number(value: number): string;
  coded(value: string): string;
  about(option: string, answer: string): string;
  oneOf(options: string): string;
  marked(options: string): string;
  high(): string;
  low(): string;
}

export interface Question {
  id: string;
  type: "yes_no" | "single_choice" | "multiple_choice" | "numeric" | "scale";
  text: string;
  epsilon: number;
  mechanism: string;
  options?: string[];
  lo?: number;
  hi?: number;
  parameters: Record<string, number>;
  longitudinal: { key: string; instantaneous_epsilon: number } | null;
  /** The respondent may decline ("Prefer not to say"). */
  optional: boolean;
  /** Help text ("" when none). */
  help: string;
  /** When the question is shown (on the true earlier answers), or null: always. */
  showIf: Condition | null;
  /** The non-response values it can take, in this order: "declined", "not_applicable". */
  extras: Extra[];
  /** A scale's points (5, 7, 11), its values (1…5, 1…7, 0…10) and anchors. */
  points?: 5 | 7 | 11;
  values?: number[];
  anchors?: { low: string; high: string } | null;
  oracle: Mechanism;
  /** The mechanism's class (BinaryRR, GRR, ...; shared/mechanisms), as the registry names it. */
  oracleName: string;
  /** ε charged for one answer: max(declared, implied by the signed thresholds). */
  cost: number;
  readonly domainSize: number | undefined;
  /** The options, or ["no", "yes"] for yes_no. */
  readonly labels: string[];
  checkAnswer(answer: Answer): unknown;
  /** The mechanism's input for an extra this question has, or InvalidValue. */
  extraValue(extra: Extra): unknown;
  /** The labels, then the extras in `words` (default English). */
  allLabels(words?: Record<Extra, string>): string[];
  describe(report: unknown): string;
}

export type Extra = "declined" | "not_applicable";
/** A show_if condition (docs/protocol.md §5.5). */
export type Condition =
  | { question: string; equals: boolean | string | number }
  | { question: string; in: (boolean | string | number)[] }
  | { question: string; includes: string }
  | { question: string; between: [number, number] }
  | { all: Condition[] }
  | { any: Condition[] };
export type QuestionStatus = "answered" | "declined" | "hidden";

export interface Survey {
  id: string;
  title: string;
  description: string;
  questions: Question[];
  totalEpsilon: number;
  /** A relayed survey's relay (signed): reports are sealed and posted there only. */
  relay: Relay | null;
  /** The language of the texts above ("en" when the definition omits it; protocol §5.7). */
  language: string;
  /** The same texts in other languages: words for people only, never used to randomize. */
  translations: Record<string, SurveyWords>;
}

/** A survey's texts in one language. */
export interface SurveyWords {
  title: string;
  description: string;
  questions: Record<
    string,
    {
      text: string;
      help: string;
      options?: string[];
      anchors?: { low: string; high: string } | null;
    }
  >;
}

/** The survey's texts for a reader wanting these language tags (best first), and their language. */
export function wording(
  survey: Survey,
  wanted: readonly (string | undefined)[],
): SurveyWords & { language: string };

export interface Relay {
  url: string;
  /** The relay's origin, serialized as browsers send it (RFC 6454: lower case, IPv6 compressed, no default port). */
  origin: string;
  minBatch: number;
  /** "question": each report sealed and shuffled alone; "submission": one respondent's together. */
  shuffleUnit: "question" | "submission";
  /** Dummy reports the relay adds to every batch (protocol §11.7), or null. */
  noise: RelayNoise | null;
}

/** The central (ε, δ) relay noise is signed to give, and the law of the dummies per output value. */
export interface RelayNoise {
  epsilon: number;
  delta: number;
  law:
    | { distribution: "binomial"; trials: number }
    | {
        distribution: "geometric";
        shift: number;
        top: number;
        /** Reduced fractions "a/b", as signed. */
        lowerRatio: string;
        upperRatio: string;
      };
}

export interface VerifiedSurvey extends Survey {
  definition: object;
  requireEnrolment: boolean;
  /** The pinned key's id, then its retired ids: "answered" marks follow these, not the URL. */
  keyIds: string[];
  /** A relayed survey: the aggregator's encryption key, verified under the pinned key at fetch. */
  encryption?: { key: Uint8Array; keyId: string };
}

export interface PreparedReport {
  id: string;
  question: string;
  payload: string;
  /** The noisy value in plain words: what leaves the device. */
  description: string;
  epsilon: number;
}

export interface Receipt {
  survey: string;
  reportIds: string[];
  epsilonCharged: number;
  delivered: boolean;
  cancelled?: boolean;
  pendingBatches?: number;
  /** Seconds the aggregator's Retry-After asked for, if it answered 429/5xx with one. */
  retryAfter?: number;
}

export interface FlushResult {
  delivered: number;
  /** The survey of each batch delivered, in order. */
  surveys: string[];
  /** Batches still to send (network error, 429, 5xx); they go again on the next flush. */
  pending: number;
  /** Batches whose enrolment token was refused (401, 403): sent again only by flush({ enrolmentToken }). */
  waiting?: number;
  /** Seconds the aggregator's Retry-After asked for, if it answered 429/5xx with one. */
  retryAfter?: number;
}

export interface ClientOptions {
  /** Base64 of the aggregator's 32-byte Ed25519 public key, pinned by the embed code. */
  publicKey?: string;
  /** Only when no publicKey is given: pin the key served at /api/v1/key on first use (imports keychain.js). */
  trustOnFirstUse?: boolean;
  storage?: StorageLike;
  policy?: Partial<Policy>;
  fetch?: typeof fetch;
  clock?: () => number;
  /**
   * The module files the page pinned by SRI (preloaded, or in its import map's integrity): no
   * other module is imported (PolicyViolation, or SignatureError for keychain.js). Default: any.
   */
  modules?: string[];
  /** Milliseconds before a request is abandoned (a batch then waits for the next flush). Default 30000. */
  timeout?: number;
}

export class SurveyClient {
  constructor(baseUrl: string, options?: ClientOptions);
  fetchSurvey(surveyId: string): Promise<VerifiedSurvey>;
  answer(
    survey: VerifiedSurvey,
    answers: Answers,
    options?: {
      confirm?: (reports: PreparedReport[]) => boolean | Promise<boolean>;
      enrolmentToken?: string;
    },
  ): Promise<Receipt>;
  /**
   * Posts the outbox in order; calls run one after another, never two at once. With
   * `enrolmentToken` (and `survey`, required: one token on several surveys would link them), that
   * survey's batch whose token was refused goes again with it.
   */
  flush(options?: { enrolmentToken: string; survey: string }): Promise<FlushResult>;
  budget(): {
    spentTotal: number;
    spentPeriod: number;
    remainingLifetime: number;
    remainingPeriod: number;
  };
}

export class MemoryStorage implements StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export const DEFAULT_POLICY: Readonly<Policy>;
export const ENROLMENT_HEADER: "X-Deniable-Enrolment";
export const RESOLUTION: number;
export const RESOLUTION_BITS: 53;

/** A buffer read in order; refill() gets more bytes or throws RangeError (the default). */
export abstract class ByteStreamSource {
  constructor(bytes?: Uint8Array);
  bytes: Uint8Array;
  position: number;
  refill(count: number): void;
  tokenBytes(count: number): Uint8Array;
  uniform53(): number;
  randbelow(upper: number): number;
}
export class SystemRandomSource extends ByteStreamSource {}
export class ArraySource extends ByteStreamSource {
  constructor(bytes: Uint8Array);
}
export const SYSTEM: SystemRandomSource;

export function canonicalize(value: unknown): string;
export function canonicalBytes(value: unknown): Uint8Array;
/** JSON.parse refusing an object with a member twice (InvalidSurvey, reason "duplicate-member"). */
export function parseJson(text: string): unknown;
/**
 * A survey document verified under a key (protocol §2, §7): its definition and validated survey,
 * or SignatureError (reason "key-id", "signature", "id-mismatch") or InvalidSurvey (with its reason).
 */
export function verifyDocument(
  document: unknown,
  surveyId: string,
  publicKey: Uint8Array,
  modules?: string[],
): Promise<{ definition: unknown; survey: Survey }>;
/**
 * The aggregator's key document (GET /api/v1/key), parsed as parseJson does: TransportError unless
 * 200, SignatureError if not JSON or a member twice (reason "duplicate-member").
 */
export function keyDocument(client: SurveyClient): Promise<unknown>;
export function b64encode(bytes: Uint8Array): string;
/** Canonical padded base64 only, or SignatureError. */
export function b64decode(text: string): Uint8Array;
/** id(K): the first 16 hex digits of SHA-256 of the 32 raw key bytes. */
export function keyId(key: Uint8Array): Promise<string>;
/** Whether `signature` is an Ed25519 signature of `message` under the raw 32-byte `publicKey`. */
export function verify(
  publicKey: Uint8Array,
  signature: Uint8Array,
  message: Uint8Array,
): Promise<boolean>;
/**
 * Imports the mechanism modules a definition's questions name (only those, from a fixed table),
 * and sealed.js (with sealing.js) when it names a relay; fetchSurvey calls it after the
 * signature check. `modules`: the files the page pinned; any other is PolicyViolation.
 */
export function loadMechanisms(definition: unknown, modules?: string[]): Promise<void>;
/** Whether `condition` holds on `given` (the answers of questions shown and answered). */
export function holds(condition: Condition, given: Answers): boolean;
/** Each question's status on `answers` (null or absent: declined), in order. */
export function statuses(questions: Question[], answers: Answers): QuestionStatus[];
/** Every question's mechanism input, one per question on every path; InvalidValue if an answer does not fit. */
export function mechanismInputs(survey: Survey, answers: Answers): unknown[];
/** The validated definition, or InvalidSurvey; its mechanisms' modules (and sealed.js, relayed) must be loaded first. */
export function parseDefinition(definition: unknown): Survey;

export class DeniableError extends Error {}
/** `reason`: a machine-readable code (protocol §7, "Reason codes"). */
export class InvalidSurvey extends DeniableError {
  readonly reason: string;
}
export class InvalidValue extends DeniableError {}
export class ReportError extends DeniableError {}
export class SignatureError extends DeniableError {
  readonly reason: string;
}
export class PolicyViolation extends DeniableError {}
export class BudgetExceeded extends DeniableError {}
export class AlreadyAnswered extends DeniableError {}
/** A report cannot be sealed, or a sealed blob does not open (sealing.js). */
export class SealingError extends DeniableError {}
export class TransportError extends DeniableError {
  status?: number;
  /** From flush: the bodies of the batches refused, and the outcome for the rest. */
  bodies?: string[];
  result?: FlushResult;
}
