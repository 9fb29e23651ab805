// The respond form: renders a verified survey, randomizes the answers in the page, shows what
// leaves the device (the noisy values and the ε spent) and sends it only after "Send".
// Mounts on every element with data-deniable-survey (the aggregator's respond page, or an
// embed snippet on another site: data-deniable-aggregator, data-deniable-key).
// The element's own HTML (for pages without JavaScript) says that JavaScript is required.

import { SurveyClient } from "./deniable.js";

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) {
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
}

function field(question) {
  const name = `q-${question.id}`;
  const box = el("fieldset", { class: "question", id: `${name}-set` }, el("legend", { text: question.text }));
  const choice = (type, label, value) => {
    const id = `${name}-${box.querySelectorAll("input").length}`;
    box.append(el("div", { class: "choice" }, el("input", { type, id, name, value }), el("label", { for: id, text: label })));
  };
  if (question.type === "yes_no") { choice("radio", "Yes", "true"); choice("radio", "No", "false"); }
  if (question.type === "single_choice") question.options.forEach((o) => choice("radio", o, o));
  if (question.type === "multiple_choice") question.options.forEach((o) => choice("checkbox", o, o));
  if (question.type === "numeric") {
    box.append(el("label", { for: name, text: `A number from ${question.lo} to ${question.hi}` }),
      el("input", { type: "number", id: name, name, min: question.lo, max: question.hi, step: "any", required: "" }));
  }
  box.append(el("p", { class: "epsilon", text: `Privacy loss of this question: ε = ${+question.cost.toFixed(4)}` }));
  return box;
}

function read(form, question) {
  const name = `q-${question.id}`;
  const checked = [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => i.value);
  if (question.type === "yes_no") return checked.length ? checked[0] === "true" : undefined;
  if (question.type === "single_choice") return checked[0];
  if (question.type === "multiple_choice") return checked;
  const text = form.querySelector(`input[name="${name}"]`).value;
  return text === "" ? undefined : Number(text);
}

export async function mount(root) {
  const status = el("p", { role: "status", "aria-live": "polite", class: "status" });
  root.replaceChildren(status);
  const say = (text, kind = "") => { status.textContent = text; status.className = `status ${kind}`; };
  const client = new SurveyClient(root.dataset.deniableAggregator ?? "", { publicKey: root.dataset.deniableKey });
  addEventListener("online", () => client.flush().then((r) => r.delivered && say("Your noisy answers were delivered.", "ok"), () => {}));
  client.flush().catch(() => {});
  let survey;
  try {
    say("Checking the survey's signature…");
    survey = await client.fetchSurvey(root.dataset.deniableSurvey);
  } catch (error) {
    say(`This survey cannot be answered here: ${error.message}. Nothing was sent.`, "error");
    root.dataset.state = "refused";
    return;
  }
  const form = el("form", { novalidate: "" }, el("h2", { text: survey.title }));
  if (survey.description) form.append(el("p", { text: survey.description }));
  survey.questions.forEach((q) => form.append(field(q)));
  const token = root.dataset.deniableEnrolment;
  if (survey.requireEnrolment && !token) {
    form.append(el("label", { for: "deniable-token", text: "Enrolment token (from the survey's organisers)" }),
      el("input", { id: "deniable-token", name: "enrolment", autocomplete: "off", required: "" }));
  }
  form.append(el("button", { type: "submit", text: "Randomize my answers" }));
  const review = el("section", { class: "review", hidden: "", "aria-labelledby": "deniable-review" });
  root.append(form, review);
  say(`Signature verified. This survey costs at most ε = ${+survey.totalEpsilon.toFixed(4)} of your privacy budget.`);
  root.dataset.state = "ready";
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answers = Object.fromEntries(survey.questions.map((q) => [q.id, read(form, q)]));
    const missing = survey.questions.find((q) => answers[q.id] === undefined);
    if (missing) { say(`Please answer: ${missing.text}`, "error"); form.querySelector(`#q-${missing.id}-set input`).focus(); return; }
    const enrolmentToken = token ?? form.querySelector("#deniable-token")?.value.trim();
    if (survey.requireEnrolment && !enrolmentToken) { say("Please enter your enrolment token.", "error"); return; }
    try {
      const options = { confirm: (reports) => confirm(reports) };
      if (survey.requireEnrolment) options.enrolmentToken = enrolmentToken;
      const receipt = await client.answer(survey, answers, options);
      if (receipt.cancelled) { say("Nothing was sent. You can change your answers."); form.hidden = false; return; }
      review.hidden = true;
      root.dataset.state = receipt.delivered ? "sent" : "queued";
      say(receipt.delivered ? `Sent and acknowledged. ε spent: ${+receipt.epsilonCharged.toFixed(4)}.`
        : "You are offline: the noisy values are saved on this device and will be sent when you are back online.", "ok");
    } catch (error) {
      say(`Not sent: ${error.message}`, "error");
    }
  });

  function confirm(reports) {
    form.hidden = true;
    const total = reports.reduce((n, r) => n + r.epsilon, 0);
    const list = el("dl");
    for (const r of reports) {
      list.append(el("dt", { text: survey.questions.find((q) => q.id === r.question).text }), el("dd", { text: r.description }));
    }
    const send = el("button", { type: "button", text: "Send these noisy values" });
    const back = el("button", { type: "button", text: "Change my answers" });
    review.replaceChildren(
      el("h2", { id: "deniable-review", tabindex: "-1", text: "What leaves your device" }),
      el("p", { text: "Your answers were randomized on this device. Only these noisy values are sent — not your answers:" }),
      list, el("p", { text: `Privacy loss spent: ε = ${+total.toFixed(4)}.` }), send, back);
    review.hidden = false;
    root.dataset.state = "review";
    review.querySelector("h2").focus();
    return new Promise((resolve) => {
      send.addEventListener("click", () => { send.disabled = back.disabled = true; say("Sending…"); resolve(true); });
      back.addEventListener("click", () => { review.hidden = true; resolve(false); });
    });
  }
}

for (const root of document.querySelectorAll("[data-deniable-survey]")) mount(root);
