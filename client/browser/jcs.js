// RFC 8785 (JCS), the bytes a survey's signature covers: keys in the default sort (UTF-16 code
// units), strings and numbers as JSON.stringify writes them (ES2019+), UTF-8.

export function canonicalize(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
  if (value && typeof value === "object") return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalize(value[k])}`).join(",")}}`;
  const text = JSON.stringify(value);
  if (text === undefined || (typeof value === "number" && !Number.isFinite(value))) throw new TypeError(`JCS cannot encode ${String(value)}`);
  return text;
}

export const canonicalBytes = (value) => new TextEncoder().encode(canonicalize(value));
