import { InvalidSurvey } from "./randomness.js";

// RFC 8785 (JCS), the bytes a survey's signature covers: keys in the default sort (UTF-16 code
// units), strings and numbers as JSON.stringify writes them (ES2019+), UTF-8.

export function canonicalize(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalize(value[k])}`)
      .join(",")}}`;
  const text = JSON.stringify(value);
  if (text === undefined || (typeof value === "number" && !Number.isFinite(value)))
    throw new TypeError(`JCS cannot encode ${String(value)}`);
  return text;
}

export const canonicalBytes = (value) => new TextEncoder().encode(canonicalize(value));

/**
 * JSON.parse, refusing an object with a member name twice (InvalidSurvey, reason "duplicate-member"):
 * parsers disagree on which one wins, so one signed text could mean two definitions (protocol §2.2).
 * The text is parsed first, so the scan below only meets valid JSON.
 */
export function parseJson(text) {
  const value = JSON.parse(text),
    stack = [];
  let key = false; // the next string is a member name
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      if (key) {
        const name = JSON.parse(text.slice(i, j + 1)),
          names = stack.at(-1);
        if (names.has(name))
          throw new InvalidSurvey(
            `survey document: member ${JSON.stringify(name)} appears twice in one object`,
            "duplicate-member",
          );
        names.add(name);
        key = false;
      }
      i = j;
    } else if (c === "{" || c === "[") {
      stack.push(c === "{" ? new Set() : null);
      key = c === "{";
    } else if (c === "}" || c === "]") {
      stack.pop();
      key = false;
    } else if (c === ",") key = stack.at(-1) instanceof Set;
  }
  return value;
}
