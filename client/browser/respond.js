// The form on each [data-deniable-survey] (docs/embedding.md): shows what leaves, sends on "Send".

import { SurveyClient } from "./deniable.js";

/** An element; attribute "text" sets its text. */
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) k === "text" ? (node.textContent = v) : node.setAttribute(k, v);
  node.append(...children);
  return node;
}

const round = (epsilon) => +epsilon.toFixed(4);

/** A question's fieldset: labelled radio buttons, checkboxes or a number input. */
function field(q) {
  const name = `q-${q.id}`, type = q.type === "multiple_choice" ? "checkbox" : "radio";
  const inputs = q.type === "numeric"
    ? [el("label", { for: name, text: `A number from ${q.lo} to ${q.hi}` }), el("input", { type: "number", id: name, name, min: q.lo, max: q.hi, step: "any", required: "" })]
    : (q.options ?? ["Yes", "No"]).map((label, i) => el("div", { class: "choice" },
      el("input", { type, id: `${name}-${i}`, name, value: q.options ? i : label === "Yes" }), el("label", { for: `${name}-${i}`, text: label })));
  return el("fieldset", { id: `${name}-set` }, el("legend", { text: q.text }), ...inputs,
    el("p", { class: "epsilon", text: `Privacy loss of this question: ε = ${round(q.cost)}` }));
}

/** The answer in the form, or undefined. */
function read(form, q) {
  // The checked inputs (options by index: a label's exact text never round-trips a form), or the number.
  const values = new FormData(form).getAll(`q-${q.id}`), [value = ""] = values;
  if (q.type === "multiple_choice") return values.map((i) => q.options[i]);
  return value === "" ? undefined : q.type === "numeric" ? Number(value) : q.type === "yes_no" ? value === "true" : q.options[value];
}

export async function mount(root) {
  const data = root.dataset, status = el("p", { role: "status", "aria-live": "polite", class: "status" });
  const say = (text, kind = "") => { status.textContent = text; status.className = `status ${kind}`; };
  root.replaceChildren(status);
  // data-deniable-modules: the files the page pinned by SRI; no other module is ever imported.
  const client = new SurveyClient(data.deniableAggregator ?? "", { publicKey: data.deniableKey, modules: data.deniableModules?.split(/\s+/) });
  // A waiting batch (this visit's or an earlier one's) goes again on "online", or after the
  // Retry-After asked for or a backoff (1 s doubling to 5 min, CSPRNG jitter): identical bytes.
  let timer, attempt = 0;
  const retry = ({ surveys = [], pending, retryAfter = 0 }) => {
    clearTimeout(timer);
    if (surveys.includes(data.deniableSurvey) && data.state === "queued") { data.state = "sent"; say("Your noisy answers were delivered.", "ok"); }
    if (!pending) return void (attempt = 0);
    const backoff = Math.min(300, 2 ** attempt++) * (0.5 + crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 33);
    timer = setTimeout(deliver, 1000 * Math.min(3600, Math.max(retryAfter, backoff)));
  };
  const deliver = () => client.flush().then(retry, (error) => error.result && retry(error.result)); // another batch refused: the rest still retried
  addEventListener("online", deliver);
  deliver();

  // A batch whose enrolment token was refused waits on this device (charged, marked answered):
  // ask for another token and send the same reports again.
  const askForToken = () => {
    const input = el("input", { id: "deniable-retry-token", autocomplete: "off", required: "" }), send = el("button", { type: "button", text: "Send my saved noisy answers" });
    const box = el("div", { class: "token" }, el("label", { for: input.id, text: "Enrolment token (from the survey's organisers)" }), input, send);
    send.onclick = async () => {
      const enrolmentToken = input.value.trim();
      if (!enrolmentToken) return say("Please enter your enrolment token.", "error");
      try {
        const result = await client.flush({ enrolmentToken, survey: data.deniableSurvey });
        box.remove(); // taken: the token now goes with the batch, on every automatic retry
        if (result.surveys.includes(data.deniableSurvey)) { data.state = "sent"; return say("Sent and acknowledged.", "ok"); }
        data.state = "queued";
        say("Not delivered yet: the noisy values are saved on this device and will be sent again automatically.", "ok");
        retry(result);
      } catch (error) {
        say(`Not sent: ${error.message}`, "error");
      }
    };
    root.append(box);
    data.state = "token";
    say("The aggregator refused the enrolment token. Your noisy answers are saved on this device: enter a valid token to send them.", "error");
    input.focus();
  };
  const waiting = () => client.load().outbox.some((e) => e.origin === client.baseUrl && e.survey === data.deniableSurvey && e.refused);
  let survey;
  try {
    say("Checking the survey's signature…");
    survey = await client.fetchSurvey(data.deniableSurvey);
  } catch (error) {
    if (waiting()) return askForToken();
    say(`This survey cannot be answered here: ${error.message}. Nothing was sent.`, "error");
    return (data.state = "refused");
  }
  const token = data.deniableEnrolment, askToken = survey.requireEnrolment && !token;
  const form = el("form", { novalidate: "" }, el("h2", { text: survey.title }), el("p", { text: survey.description }), ...survey.questions.map(field),
    ...(askToken ? [el("label", { for: "deniable-token", text: "Enrolment token (from the survey's organisers)" }),
      el("input", { id: "deniable-token", autocomplete: "off", required: "" })] : []),
    el("button", { type: "submit", text: "Randomize my answers" }));
  const review = el("section", { class: "review", hidden: "", "aria-labelledby": "deniable-review" });
  root.append(form, review);
  say(`Signature verified. This survey costs at most ε = ${round(survey.totalEpsilon)} of your privacy budget.`);
  data.state = "ready";

  // The noisy reports; true on "Send", false on "Change my answers".
  const confirm = (reports) => new Promise((resolve) => {
    const send = el("button", { type: "button", text: "Send these noisy values" }), back = el("button", { type: "button", text: "Change my answers" });
    send.onclick = () => { send.disabled = back.disabled = true; say("Sending…"); resolve(true); };
    back.onclick = () => { review.hidden = true; resolve(false); };
    review.replaceChildren(el("h2", { id: "deniable-review", tabindex: "-1", text: "What leaves your device" }),
      el("p", { text: "Your answers were randomized on this device. Only these noisy values are sent — not your answers:" }),
      el("dl", {}, ...reports.flatMap((r) => [el("dt", { text: survey.questions.find((q) => q.id === r.question).text }), el("dd", { text: r.description })])),
      el("p", { text: `Privacy loss spent: ε = ${round(reports.reduce((n, r) => n + r.epsilon, 0))}.` }), send, back);
    form.hidden = !(review.hidden = false);
    data.state = "review";
    review.firstChild.focus();
  });

  form.onsubmit = async (event) => {
    event.preventDefault();
    const answers = Object.fromEntries(survey.questions.map((q) => [q.id, read(form, q)]));
    const missing = survey.questions.find((q) => answers[q.id] === undefined);
    if (missing) { say(`Please answer: ${missing.text}`, "error"); return form.querySelector(`#q-${missing.id}-set input`).focus(); }
    const enrolmentToken = survey.requireEnrolment ? token || form.querySelector("#deniable-token").value.trim() : undefined;
    if (enrolmentToken === "") return say("Please enter your enrolment token.", "error");
    try {
      const receipt = await client.answer(survey, answers, { confirm, enrolmentToken });
      if (receipt.cancelled) { form.hidden = false; return say("Nothing was sent. You can change your answers."); }
      review.hidden = true;
      data.state = receipt.delivered ? "sent" : "queued";
      say(receipt.delivered ? `Sent and acknowledged. ε spent: ${round(receipt.epsilonCharged)}.`
        : "Not delivered yet (offline, or the aggregator is busy): the noisy values are saved on this device and will be sent again automatically.", "ok");
      retry({ pending: receipt.pendingBatches, retryAfter: receipt.retryAfter });
    } catch (error) {
      if (waiting()) { review.hidden = true; return askForToken(); }
      say(`${error.status ? "Refused by the aggregator, nothing was recorded" : "Not sent"}: ${error.message}`, "error");
    }
  };
}

for (const root of document.querySelectorAll("[data-deniable-survey]")) mount(root);
