// RFC 8785 JSON Canonicalization Scheme: the bytes a survey's Ed25519 signature covers. Keys sorted
// by UTF-16 code units (the default sort); strings and numbers as JSON.stringify writes them
// (numbers as Number.prototype.toString, -0 as 0; ES2019+); UTF-8 output.

export function canonicalize(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
  if (value && typeof value === "object") return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalize(value[k])}`).join(",")}}`;
  const text = JSON.stringify(value); // undefined for undefined and functions
  if (text === undefined || (typeof value === "number" && !Number.isFinite(value))) throw new TypeError(`JCS cannot encode ${String(value)}`);
  return text;
}

export const canonicalBytes = (value) => new TextEncoder().encode(canonicalize(value));
