// The respond form, mounted on every element with data-deniable-survey (the aggregator's respond
// page, or an embed: data-deniable-aggregator, data-deniable-key; docs/embedding.md). It shows what
// leaves the device (the noisy values, the ε spent) and sends it only after "Send".

import { SurveyClient } from "./deniable.js";

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) k === "text" ? (node.textContent = v) : node.setAttribute(k, v);
  node.append(...children);
  return node;
}

const round = (epsilon) => +epsilon.toFixed(4);

/** A fieldset per question: labelled radio buttons, checkboxes or a number input. */
function field(q) {
  const name = `q-${q.id}`, box = el("fieldset", { id: `${name}-set` }, el("legend", { text: q.text }));
  const choice = (type, label, value) => {
    const id = `${name}-${box.querySelectorAll("input").length}`;
    box.append(el("div", { class: "choice" }, el("input", { type, id, name, value }), el("label", { for: id, text: label })));
  };
  if (q.type === "yes_no") ["Yes", "No"].forEach((label) => choice("radio", label, label === "Yes"));
  else if (q.type === "numeric") {
    box.append(el("label", { for: name, text: `A number from ${q.lo} to ${q.hi}` }), el("input", { type: "number", id: name, name, min: q.lo, max: q.hi, step: "any", required: "" }));
  } else q.options.forEach((o) => choice(q.type === "multiple_choice" ? "checkbox" : "radio", o, o));
  box.append(el("p", { class: "epsilon", text: `Privacy loss of this question: ε = ${round(q.cost)}` }));
  return box;
}

/** The answer given in the form, or undefined when none was. */
function read(form, q) {
  const inputs = [...form.querySelectorAll(`[name="q-${q.id}"]`)], checked = inputs.filter((i) => i.checked).map((i) => i.value);
  if (q.type === "numeric") return inputs[0].value === "" ? undefined : Number(inputs[0].value);
  if (q.type === "multiple_choice") return checked;
  return q.type === "yes_no" && checked.length ? checked[0] === "true" : checked[0];
}

export async function mount(root) {
  const status = el("p", { role: "status", "aria-live": "polite", class: "status" }), data = root.dataset;
  const say = (text, kind = "") => { status.textContent = text; status.className = `status ${kind}`; };
  const state = (name) => { data.state = name; };
  root.replaceChildren(status);
  const client = new SurveyClient(data.deniableAggregator ?? "", { publicKey: data.deniableKey });
  addEventListener("online", () => client.flush().then((r) => r.delivered && say("Your noisy answers were delivered.", "ok"), () => {}));
  client.flush().catch(() => {}); // a batch queued while offline, on an earlier visit
  let survey;
  try {
    say("Checking the survey's signature…");
    survey = await client.fetchSurvey(data.deniableSurvey);
  } catch (error) {
    say(`This survey cannot be answered here: ${error.message}. Nothing was sent.`, "error");
    return state("refused");
  }
  const form = el("form", { novalidate: "" }, el("h2", { text: survey.title }), ...(survey.description ? [el("p", { text: survey.description })] : []), ...survey.questions.map(field));
  const token = data.deniableEnrolment, review = el("section", { class: "review", hidden: "", "aria-labelledby": "deniable-review" });
  if (survey.requireEnrolment && !token) {
    form.append(el("label", { for: "deniable-token", text: "Enrolment token (from the survey's organisers)" }), el("input", { id: "deniable-token", autocomplete: "off", required: "" }));
  }
  form.append(el("button", { type: "submit", text: "Randomize my answers" }));
  root.append(form, review);
  say(`Signature verified. This survey costs at most ε = ${round(survey.totalEpsilon)} of your privacy budget.`);
  state("ready");

  // Shows the noisy reports; resolves true on "Send", false on "Change my answers".
  const confirm = (reports) => new Promise((resolve) => {
    const send = el("button", { type: "button", text: "Send these noisy values" }), back = el("button", { type: "button", text: "Change my answers" });
    send.onclick = () => { send.disabled = back.disabled = true; say("Sending…"); resolve(true); };
    back.onclick = () => { review.hidden = true; resolve(false); };
    review.replaceChildren(el("h2", { id: "deniable-review", tabindex: "-1", text: "What leaves your device" }),
      el("p", { text: "Your answers were randomized on this device. Only these noisy values are sent — not your answers:" }),
      el("dl", {}, ...reports.flatMap((r) => [el("dt", { text: survey.questions.find((q) => q.id === r.question).text }), el("dd", { text: r.description })])),
      el("p", { text: `Privacy loss spent: ε = ${round(reports.reduce((n, r) => n + r.epsilon, 0))}.` }), send, back);
    form.hidden = true;
    review.hidden = false;
    state("review");
    review.firstChild.focus();
  });

  form.onsubmit = async (event) => {
    event.preventDefault();
    const answers = Object.fromEntries(survey.questions.map((q) => [q.id, read(form, q)]));
    const missing = survey.questions.find((q) => answers[q.id] === undefined);
    if (missing) { say(`Please answer: ${missing.text}`, "error"); return form.querySelector(`#q-${missing.id}-set input`).focus(); }
    const enrolmentToken = token ?? form.querySelector("#deniable-token")?.value.trim();
    if (survey.requireEnrolment && !enrolmentToken) return say("Please enter your enrolment token.", "error");
    try {
      const receipt = await client.answer(survey, answers, { confirm, enrolmentToken: survey.requireEnrolment ? enrolmentToken : undefined });
      if (receipt.cancelled) { form.hidden = false; return say("Nothing was sent. You can change your answers."); }
      review.hidden = true;
      state(receipt.delivered ? "sent" : "queued");
      say(receipt.delivered ? `Sent and acknowledged. ε spent: ${round(receipt.epsilonCharged)}.`
        : "You are offline: the noisy values are saved on this device and will be sent when you are back online.", "ok");
    } catch (error) {
      say(`Not sent: ${error.message}`, "error");
    }
  };
}

for (const root of document.querySelectorAll("[data-deniable-survey]")) mount(root);
