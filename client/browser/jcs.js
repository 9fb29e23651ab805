// RFC 8785 JSON Canonicalization Scheme: the bytes a survey's Ed25519 signature covers.
// Keys sorted by UTF-16 code units, no whitespace, strings as JSON.stringify escapes them,
// numbers as Number.prototype.toString writes them (ES2019+), UTF-8 output.

export function canonicalize(value) {
  if (value === null || typeof value === "boolean") return String(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("JCS has no NaN or Infinity");
    return String(value); // -0 prints as "0"
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
  if (typeof value === "object") {
    const keys = Object.keys(value).sort(); // default sort compares UTF-16 code units
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalize(value[k])}`).join(",")}}`;
  }
  throw new TypeError(`cannot canonicalize a ${typeof value}`);
}

export function canonicalBytes(value) {
  return new TextEncoder().encode(canonicalize(value));
}
