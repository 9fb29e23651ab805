// The form on each [data-deniable-survey] (docs/embedding.md): shows what leaves, sends on "Send".
// Words: messages.js, in the language of data-deniable-lang or else the browser's; the survey's
// own text (title, questions, options) is the operator's and shown as signed.

import {
  AlreadyAnswered,
  BudgetExceeded,
  DeniableError,
  InvalidSurvey,
  MemoryStorage,
  PolicyViolation,
  SignatureError,
  SurveyClient,
  TransportError,
  statuses,
  wording,
} from "./deniable.js";
import { language, translator } from "./messages.js";
import { describe, el, exclusive, questionField, readAnswer } from "./respond_fields.js";

// Why: a send needs an action taken after the review is visible; a double click, a double tap
// or a repeated key on "Randomize my answers" must not land on "Send" (which may sit under it).
export const SEND_HOLD_MS = 1000;

/** The device's budget in words: what is left, the caps, and when this period's spending comes back. */
function budgetText(client, t, number, lang) {
  const p = client.policy,
    left = client.budget(),
    start = client.clock() - p.periodDays * 86400000;
  const spent = client
    .load()
    .ledger.filter((e) => e.at > start && e.epsilon > 0)
    .map((e) => e.at);
  const text = t("budget", {
    period_left: number(Math.max(0, left.remainingPeriod)),
    period_cap: number(p.periodEpsilon),
    days: p.periodDays,
    lifetime_left: number(Math.max(0, left.remainingLifetime)),
    lifetime_cap: number(p.lifetimeEpsilon),
    survey_cap: number(p.maxSurveyEpsilon),
  });
  const renews = spent.length
    ? t("budget_renews", {
        date: new Intl.DateTimeFormat(lang, { dateStyle: "long" }).format(
          Math.min(...spent) + p.periodDays * 86400000,
        ),
      })
    : t("budget_fresh", { days: p.periodDays });
  return `${text} ${renews}`;
}

/** True when the aggregator answers but refuses this page's origin (CORS), not when it is down. */
async function corsRefused(client) {
  const target = new URL(client.baseUrl || "/", location.href);
  if (target.origin === location.origin) return false;
  // An opaque (no-cors) request succeeds when the server answers: then CORS refused the real one.
  return fetch(`${client.baseUrl}/api/v1/key`, {
    mode: "no-cors",
    credentials: "omit",
    cache: "no-store",
  }).then(
    () => true,
    () => false,
  );
}

export async function mount(root) {
  const data = root.dataset,
    lang = language([data.deniableLang, ...(navigator.languages ?? [])]),
    t = translator(lang);
  const format = new Intl.NumberFormat(lang, { maximumFractionDigits: 2 }),
    number = (x) => format.format(x);
  data.state = "loading"; // started: watch.js leaves this form to us
  root.setAttribute("lang", lang);
  const status = el("p", {
    role: "status",
    "aria-live": "polite",
    class: "deniable-status",
    tabindex: "-1",
  });
  const say = (text, kind) => {
    status.textContent = text;
    status.className = `deniable-status${kind ? ` deniable-${kind}` : ""}`;
  };
  // The page's introductions stay (the general one, and a relayed survey's relay passage).
  root.replaceChildren(...root.querySelectorAll(".deniable-intro"), status);
  // The editor's preview of a draft (data-deniable-preview): the page as respondents see it,
  // on a throw-away ledger in memory (this device's budget is never charged), and "Send" sends
  // nothing.
  const preview = "deniablePreview" in data;
  let client;
  try {
    // data-deniable-modules: the files the page pinned by SRI; no other module is ever imported.
    client = new SurveyClient(data.deniableAggregator ?? "", {
      publicKey: data.deniableKey,
      modules: data.deniableModules?.split(/\s+/),
      ...(preview && { storage: new MemoryStorage() }),
    });
  } catch (error) {
    console.error("Deniable:", error);
    say(t("refused_signature"), "error");
    return void (data.state = "refused");
  }
  const mine = (e) => e.origin === client.baseUrl && e.survey === data.deniableSurvey;
  // A waiting batch (this visit's or an earlier one's) goes again on "online", or after the
  // Retry-After asked for or a backoff (1 s doubling to 5 min, CSPRNG jitter): identical bytes.
  let timer,
    attempt = 0,
    delivered = () => say(t("delivered_now"), "ok");
  const retry = ({ surveys = [], pending, retryAfter = 0 }) => {
    clearTimeout(timer);
    if (surveys.includes(data.deniableSurvey) && data.state === "queued") {
      data.state = "sent";
      delivered();
    }
    if (!pending) return void (attempt = 0);
    const backoff =
      Math.min(300, 2 ** attempt++) *
      (0.5 + crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 33);
    timer = setTimeout(deliver, 1000 * Math.min(3600, Math.max(retryAfter, backoff)));
  };
  // Another batch refused: the rest still retried. Resolves to the flush's outcome.
  const deliver = () =>
    client.flush().then(
      (result) => (retry(result), result),
      (error) => (error.result && retry(error.result), error.result),
    );
  addEventListener("online", deliver);
  const first = deliver();

  // A batch whose enrolment token was refused waits on this device (charged, marked answered):
  // ask for another token and send the same reports again.
  const askForToken = () => {
    const input = el("input", {
      id: "deniable-retry-token",
      type: "text",
      autocomplete: "off",
      required: "",
    });
    const send = el("button", { type: "button", class: "deniable-primary", text: t("token_send") });
    const box = el(
      "div",
      { class: "deniable-token" },
      el("label", { for: input.id, text: t("token_label") }),
      input,
      el("div", { class: "deniable-buttons" }, send),
    );
    send.onclick = async () => {
      const enrolmentToken = input.value.trim();
      if (!enrolmentToken) {
        say(t("required_token"), "error");
        return input.focus();
      }
      try {
        const result = await client.flush({ enrolmentToken, survey: data.deniableSurvey });
        status.focus();
        box.remove(); // taken: the token now goes with the batch, on every automatic retry
        if (result.surveys.includes(data.deniableSurvey)) {
          data.state = "sent";
          return say(t("delivered_now"), "ok");
        }
        data.state = "queued";
        say(t("queued"), "ok");
        retry(result);
      } catch (error) {
        console.error("Deniable:", error);
        say(t(error.status ? "server_refused" : "not_sent"), "error");
      }
    };
    root.append(box);
    data.state = "token";
    say(t("token_refused"), "error");
    input.focus();
  };
  const waiting = () => client.load().outbox.some((e) => mine(e) && e.refused);

  /** A survey this page will not show: why, in words; the details for developers in the console. */
  const refuse = async (error) => {
    console.error("Deniable:", error);
    if (error instanceof AlreadyAnswered) {
      // Not an error. The flush started on load may have just delivered this survey's batch.
      const result = await first;
      const [text, next] = result?.surveys?.includes(data.deniableSurvey)
        ? ["delivered_revisit", "sent"]
        : client.load().outbox.some(mine)
          ? ["already_waiting", "queued"]
          : ["already_answered", "answered"];
      say(t(text), "ok");
      return void (data.state = next);
    }
    let text;
    if (error instanceof BudgetExceeded)
      text = t("refused_budget", {
        when: /lifetime/.test(error.message)
          ? t("budget_lifetime")
          : t("budget_period", { days: client.policy.periodDays }),
      });
    else if (error instanceof SignatureError) text = t("refused_signature");
    // (a module this page did not pin: survey.js's loadMechanisms says "not pinned")
    else if (error instanceof PolicyViolation)
      text = t(/not pinned/.test(error.message) ? "load_failed" : "refused_policy");
    else if (error instanceof InvalidSurvey) text = t("refused_invalid");
    else if (error instanceof TransportError && error.status === 409) text = t("closed");
    else if (error instanceof TransportError && error.status) text = t("not_available");
    else if (error instanceof TransportError && (await corsRefused(client))) {
      text = t("cors");
      console.error(
        t("cors_console", { aggregator: new URL(client.baseUrl).origin, origin: location.origin }),
      );
    } else if (error instanceof TransportError) text = t("unreachable");
    else text = t("load_failed"); // a mechanism module that did not load, or failed its pin
    say(text, "error");
    data.state = "refused";
  };

  let survey;
  try {
    say(t("checking"));
    survey = await client.fetchSurvey(data.deniableSurvey);
  } catch (error) {
    if (waiting()) return askForToken();
    return refuse(error);
  }
  // The survey's own text in the language the page chose (data-deniable-text-lang), else the
  // form's or the browser's if the survey has it, else its own; marked where it is not the form's.
  const words = wording(survey, [data.deniableTextLang, lang, ...(navigator.languages ?? [])]),
    textLang = words.language === lang ? undefined : words.language,
    wordsOf = (q) => words.questions[q.id];
  for (const q of survey.questions)
    q.describe = (report) => describe(q, report, t, number, wordsOf(q).options); // in the respondent's words

  const token = data.deniableEnrolment,
    askToken = survey.requireEnrolment && !token;
  const base = client.baseUrl,
    link = (href, text) => el("a", { href, target: "_blank", rel: "noopener noreferrer", text });
  const errorFor = (id) => el("p", { id: `${id}-error`, class: "deniable-field-error" });
  const heading =
    data.deniableHeading === "none" ? [] : [el("h2", { lang: textLang, text: words.title })];
  const form = el(
    "form",
    { class: "deniable-form", novalidate: "" },
    ...heading,
    ...(words.description ? [el("p", { lang: textLang, text: words.description })] : []),
    el(
      "p",
      { class: "deniable-note" },
      `${t("cost_total", { epsilon: number(survey.totalEpsilon) })} `,
      link(
        `${base}/about/epsilon?lang=${lang}&survey=${encodeURIComponent(data.deniableSurvey)}`,
        t("epsilon_link"),
      ),
    ),
    el("p", { class: "deniable-note", text: budgetText(client, t, number, lang) }),
    ...survey.questions.map((q) => questionField(q, t, number, wordsOf(q), textLang)),
    ...(askToken
      ? [
          el("label", { for: "deniable-token", text: t("token_label") }),
          el("input", {
            id: "deniable-token",
            type: "text",
            autocomplete: "off",
            "aria-describedby": "deniable-token-error",
          }),
          errorFor("deniable-token"),
        ]
      : []),
    el(
      "div",
      { class: "deniable-buttons" },
      el("button", { type: "submit", class: "deniable-primary", text: t("randomize") }),
    ),
  );
  const review = el("section", {
    class: "deniable-review",
    hidden: "",
    "aria-labelledby": "deniable-review",
  });
  const thanks = el("section", {
    class: "deniable-thanks",
    hidden: "",
    "aria-labelledby": "deniable-thanks",
  });
  // Questions shown or hidden as answers change are announced here, politely, apart from the
  // status (errors, sending): "Another question now applies…", "… no longer applies…".
  const changes = el("p", { class: "deniable-announce", "aria-live": "polite" });
  form.prepend(changes);
  root.append(form, review, thanks);
  say("");
  data.state = "ready";

  /** Marks (or clears, text undefined) the error of one field: next to it, announced, linked. */
  const mark = (name, text) => {
    form.querySelector(`#${name}-error`).textContent = text ?? "";
    for (const input of form.querySelectorAll(`[aria-describedby~="${name}-error"]`))
      text ? input.setAttribute("aria-invalid", "true") : input.removeAttribute("aria-invalid");
    form.querySelector(`#${name}-set`)?.classList.toggle("deniable-invalid", Boolean(text));
  };
  const read = (q, values) => readAnswer(q, values, t, number);
  /** The true answers the form holds now (declined: null; unanswered or invalid: left out). */
  const current = (values = new FormData(form)) => {
    const answers = {};
    for (const q of survey.questions) {
      const { answer, declined, problem } = read(q, values);
      if (declined) answers[q.id] = null;
      else if (!problem) answers[q.id] = answer;
    }
    return answers;
  };
  const fieldset = (q) => form.querySelector(`#q-${q.id}-set`);
  /**
   * Shows the questions whose show_if holds on the answers given, hides the others (their answers
   * stay in the form but are never sent), and announces the change. A show_if names only earlier
   * questions, so what changes is always below the control just used: nothing moves under it.
   */
  const applyConditions = () => {
    const now = statuses(survey.questions, current()),
      said = [];
    survey.questions.forEach((q, i) => {
      const set = fieldset(q),
        hide = now[i] === "hidden";
      if (set.hidden === hide) return;
      set.hidden = hide;
      if (hide) mark(`q-${q.id}`, undefined);
      said.push(t(hide ? "question_hidden" : "question_shown", { question: wordsOf(q).text }));
    });
    if (said.length) changes.textContent = said.join(" ");
    return now;
  };
  const tokenMissing = () => form.querySelector("#deniable-token").value.trim() === "";
  /** The answers, or undefined after marking every problem next to its question. */
  const check = () => {
    const values = new FormData(form),
      answers = {},
      problems = [],
      shown = applyConditions();
    for (const [i, q] of survey.questions.entries()) {
      if (shown[i] === "hidden") continue; // not asked: no answer goes to the client
      const name = `q-${q.id}`,
        { answer, declined, problem } = read(q, values);
      mark(name, problem);
      if (problem) problems.push(form.querySelector(`[name="${name}"]`));
      else answers[q.id] = declined ? null : answer;
    }
    if (askToken) {
      const missing = tokenMissing();
      mark("deniable-token", missing ? t("required_token") : undefined);
      if (missing) problems.push(form.querySelector("#deniable-token"));
    }
    if (!problems.length) return answers;
    say(t("fix_errors"), "error");
    data.state = "errors";
    problems[0].focus();
    // On a phone the message sits below the options: bring it into view with its question.
    form
      .querySelector(`#${problems[0].name.replace(/-declined$/, "")}-error`)
      ?.scrollIntoView({ block: "nearest" });
  };

  // An error goes as soon as its answer is fixed (and changes words if it is wrong another
  // way); a field not yet marked stays unmarked while the respondent is still answering.
  const recheck = (event) => {
    const name = (event.target.name || event.target.id).replace(/-declined$/, ""),
      question = survey.questions.find((q) => `q-${q.id}` === name);
    if (!form.querySelector(`#${name}-error`)?.textContent) return;
    if (question) mark(name, read(question, new FormData(form)).problem);
    else if (name === "deniable-token" && !tokenMissing()) mark(name, undefined);
    if (!form.querySelector("[aria-invalid]") && data.state === "errors") {
      say("");
      data.state = "ready";
    }
  };
  form.addEventListener("input", exclusive);
  form.addEventListener("input", recheck);
  form.addEventListener("change", recheck);
  form.addEventListener("input", applyConditions);
  form.addEventListener("change", applyConditions);
  applyConditions();
  changes.textContent = ""; // the first state is the page as shown, not a change

  // Each question's status ("answered", "declined", "hidden") for the answers under review.
  let shown = [];
  // The noisy reports; true on "Send", false on "Change my answers".
  const confirm = (reports) =>
    new Promise((resolve) => {
      const send = el("button", {
        type: "button",
        class: "deniable-primary",
        disabled: "",
        text: t("send"),
      });
      const back = el("button", {
        type: "button",
        class: "deniable-secondary",
        disabled: "",
        text: t("change"),
      });
      send.onclick = () => {
        if (preview) {
          send.disabled = true; // "Change my answers" stays, to try other answers
          say(t("preview_not_sent"), "ok");
          status.focus();
          return resolve(false);
        }
        send.disabled = back.disabled = true;
        say(t("sending"));
        status.focus();
        resolve(true);
      };
      back.onclick = () => {
        review.hidden = true;
        form.hidden = false;
        say(t("cancelled"));
        form.querySelector("input").focus();
        resolve(false);
      };
      const spent = reports.reduce((n, r) => n + r.epsilon, 0);
      review.replaceChildren(
        el("h2", { id: "deniable-review", tabindex: "-1", text: t("review_heading") }),
        el("p", { text: t("review_explain") }),
        el("p", { text: t("review_why") }),
        // Whenever a value can read "Prefer not to say" or "Not asked", even on a path without them.
        ...(survey.questions.some((q) => q.extras.length)
          ? [el("p", { text: t("review_extras") })]
          : []),
        el(
          "dl",
          {},
          ...reports.flatMap((r, i) => {
            const q = survey.questions.find((x) => x.id === r.question),
              status = shown[i],
              how = {
                duchi: "how_numeric",
                discrete_laplace: "how_noise",
                option_sampling: "how_sampled",
              }[q.mechanism];
            return [
              el("dt", { lang: textLang, text: wordsOf(q).text }),
              el("dd", { class: "deniable-value", text: r.description }),
              ...(status === "answered"
                ? []
                : [
                    el("dd", {
                      class: "deniable-note",
                      text: t(status === "declined" ? "review_declined" : "review_not_asked"),
                    }),
                  ]),
              ...(how ? [el("dd", { class: "deniable-note", text: t(how) })] : []),
            ];
          }),
        ),
        el("p", { text: t("review_cost", { epsilon: number(spent) }) }),
        el("div", { class: "deniable-buttons" }, send, back),
      );
      form.hidden = !(review.hidden = false);
      say("");
      data.state = "review";
      review.firstChild.focus();
      setTimeout(() => {
        send.disabled = back.disabled = false;
      }, SEND_HOLD_MS); // both: a double click leaves the review up
    });

  form.onsubmit = async (event) => {
    event.preventDefault();
    say("");
    const answers = check();
    if (!answers) return;
    shown = statuses(survey.questions, answers);
    const enrolmentToken = survey.requireEnrolment
      ? token || form.querySelector("#deniable-token").value.trim()
      : undefined;
    try {
      const receipt = await client.answer(survey, answers, { confirm, enrolmentToken });
      if (receipt.cancelled) return void (data.state = review.hidden ? "ready" : "previewed");
      review.hidden = true;
      data.state = receipt.delivered ? "sent" : "queued";
      const results = receipt.delivered && data.deniableResults;
      say("");
      thanks.replaceChildren(
        el("h2", { id: "deniable-thanks", tabindex: "-1", text: t("thanks_heading") }),
        el("p", {
          class: receipt.delivered ? "deniable-ok" : "deniable-waiting",
          text: receipt.delivered
            ? t("sent", {
                count: receipt.reportIds.length,
                epsilon: number(receipt.epsilonCharged),
              })
            : t("queued"),
        }),
        el("p", { class: "deniable-note", text: budgetText(client, t, number, lang) }),
        ...(results ? [el("p", {}, link(results, t("results_link")))] : []),
      );
      thanks.hidden = false;
      thanks.firstChild.focus();
      delivered = () => {
        thanks.querySelector("p").textContent = t("delivered_now");
        say(t("delivered_now"), "ok");
      };
      retry({ pending: receipt.pendingBatches, retryAfter: receipt.retryAfter });
    } catch (error) {
      review.hidden = true;
      if (waiting()) return askForToken();
      if (error instanceof AlreadyAnswered || error instanceof BudgetExceeded) {
        form.hidden = true;
        return refuse(error);
      }
      console.error("Deniable:", error);
      form.hidden = false;
      say(
        t(
          error instanceof TransportError && error.status
            ? "server_refused"
            : error instanceof DeniableError
              ? "refused_invalid"
              : "not_sent",
        ),
        "error",
      );
      data.state = "ready";
      status.focus();
    }
  };
}

for (const root of document.querySelectorAll("[data-deniable-survey]")) mount(root);
