// The respond form's questions (respond.js): each question's fieldset (help, scale, "Prefer not
// to say"), what the form holds for it, and the small element builder the form shares.

/** An element; attribute "text" sets its text, undefined attributes are left out. */
export function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes))
    if (v !== undefined) k === "text" ? (node.textContent = v) : node.setAttribute(k, v);
  node.append(...children);
  return node;
}

/**
 * What a noisy report says, in the respondent's words (the mechanism's own text is English and
 * technical); `options`: the option labels as shown (a translation's), by index.
 */
export function describe(q, report, t, number, options = q.options) {
  // The form's phrases; each mechanism picks the one that fits its reports (Mechanism.words).
  const base = q.type === "yes_no" ? [t("no"), t("yes")] : (options ?? q.labels),
    extras = { declined: t("prefer_not"), not_applicable: t("not_asked") };
  return q.oracle.words(report, {
    labels: [...base, ...q.extras.map((e) => extras[e])],
    yesNo: (bit) => t(bit ? "yes" : "no"),
    number,
    coded: (value) => t("value_coded", { value }),
    about: (option, answer) => t("value_about", { option, answer }),
    oneOf: (options) => t("value_one_of", { options }),
    marked: (options) => t("value_marked", { options: options || t("value_none") }),
    high: () => t("value_high"),
    low: () => t("value_low"),
  });
}

// Radios carry the answer's index ("true"/"false" for yes/no), or DECLINED; multiple choice
// and numbers have a "Prefer not to say" checkbox beside them, exclusive of an answer.
// `words`: the question's texts as shown ({text, help, options, anchors}: the survey's or a
// translation's) and `lang`, their language where it is not the form's (else undefined).
export const DECLINED = "declined";
export function questionField(q, t, number, words = q, lang = undefined) {
  const name = `q-${q.id}`,
    radio = q.type !== "multiple_choice" && q.type !== "numeric",
    help = words.help
      ? [el("p", { id: `${name}-help`, class: "deniable-help", lang, text: words.help })]
      : [],
    anchors = scaleAnchors(q, name, t, words.anchors, lang),
    // The help, the scale's anchors, then the error: read with every control of the question.
    described = [...help, ...anchors, { id: `${name}-error` }].map((p) => p.id).join(" ");
  const choice = (id, value, label, type = radio ? "radio" : "checkbox", inputName = name, in_) =>
    el(
      "div",
      { class: "deniable-choice" },
      el("input", { type, id, name: inputName, value, "aria-describedby": described }),
      el("label", { for: id, lang: in_, text: label }),
    );
  let inputs;
  if (q.type === "numeric")
    inputs = [
      el("label", {
        for: name,
        class: "deniable-number",
        text: t("number_label", { lo: number(q.lo), hi: number(q.hi) }),
      }),
      el("input", {
        type: "number",
        id: name,
        name,
        min: q.lo,
        max: q.hi,
        step: "any",
        inputmode: "decimal",
        "aria-describedby": described,
      }),
    ];
  else if (q.type === "scale")
    inputs = [
      el(
        "div",
        { class: "deniable-scale" },
        ...q.values.map((value, i) =>
          el(
            "div",
            { class: "deniable-point" },
            el("input", {
              type: "radio",
              id: `${name}-${i}`,
              name,
              value: i,
              "aria-describedby": described,
            }),
            el("label", { for: `${name}-${i}`, text: String(value) }),
          ),
        ),
      ),
      ...anchors,
    ];
  else
    inputs = (words.options ?? [t("yes"), t("no")]).map((label, i) =>
      choice(
        `${name}-${i}`,
        q.options ? i : String(i === 0),
        label,
        undefined,
        name,
        q.options && lang,
      ),
    );
  if (q.optional) {
    const decline = radio
      ? choice(`${name}-declined`, DECLINED, t("prefer_not"))
      : choice(`${name}-declined`, DECLINED, t("prefer_not"), "checkbox", `${name}-declined`);
    decline.classList.add("deniable-decline");
    inputs.push(decline);
  }
  return el(
    "fieldset",
    { id: `${name}-set`, "data-question": q.id },
    el("legend", { lang, text: words.text }),
    ...help,
    ...inputs,
    el("p", { id: `${name}-error`, class: "deniable-field-error" }),
    el("p", { class: "deniable-cost", text: t("question_cost", { epsilon: number(q.cost) }) }),
  );
}

/** A scale's ends in words (its anchors, or the net promoter score's), or nothing. */
function scaleAnchors(q, name, t, anchors = q.anchors, lang = undefined) {
  if (q.type !== "scale" || !(anchors || q.points === 11)) return [];
  const [low, high] = [q.values[0], q.values.at(-1)];
  const words = anchors
    ? [
        t("scale_anchor", { value: low, label: anchors.low }),
        t("scale_anchor", { value: high, label: anchors.high }),
      ]
    : t("scale_nps").split(/, /);
  return [
    el(
      "p",
      { id: `${name}-anchors`, class: "deniable-anchors" },
      // The survey's anchors are in its language; the net promoter score's are the form's.
      ...words.map((text) => el("span", { lang: anchors ? lang : undefined, text })),
    ),
  ];
}

/**
 * {answer, declined, problem} of one question as the form holds it (problem undefined when
 * fine; declined: "Prefer not to say" chosen).
 */
export function readAnswer(q, values, t, number) {
  const name = `q-${q.id}`,
    given = values.getAll(name),
    [value = ""] = given;
  if (value === DECLINED || values.get(`${name}-declined`) === DECLINED)
    return { answer: undefined, declined: true };
  // Options by index: a label's exact text never round-trips a form.
  const answer =
    q.type === "multiple_choice"
      ? given.map((i) => q.options[i])
      : value === ""
        ? undefined
        : q.type === "numeric"
          ? Number(value)
          : q.type === "yes_no"
            ? value === "true"
            : q.type === "scale"
              ? q.values[value]
              : q.options[value];
  if (answer === undefined)
    return { answer, problem: t(q.optional ? "required_or_decline" : "required") };
  try {
    q.checkAnswer(answer);
  } catch {
    return { answer, problem: t("out_of_range", { lo: number(q.lo), hi: number(q.hi) }) };
  }
  return { answer };
}

// "Prefer not to say" beside checkboxes or a number excludes an answer, and an answer excludes it.
export function exclusive(event) {
  const input = event.target,
    name = input.name.replace(/-declined$/, ""),
    declining = input.name.endsWith("-declined");
  if (!name.startsWith("q-") || input.type === "radio") return;
  if (declining && input.checked)
    for (const other of input.form.querySelectorAll(`[name="${name}"]`))
      other.type === "checkbox" ? (other.checked = false) : (other.value = "");
  else if (!declining && (input.checked || input.value !== "")) {
    const decline = input.form.querySelector(`[name="${name}-declined"]`);
    if (decline) decline.checked = false;
  }
}
