// RFC 8785 JSON Canonicalization Scheme: the bytes a survey's Ed25519 signature covers.
// Keys sorted by UTF-16 code units (the default sort), strings as JSON.stringify escapes them,
// numbers as Number.prototype.toString writes them (ES2019+; -0 prints as 0), UTF-8 output.

export function canonicalize(value) {
  if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError("JCS has no NaN or Infinity");
  if (value === null || ["boolean", "number"].includes(typeof value)) return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
  if (typeof value === "object") return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalize(value[k])}`).join(",")}}`;
  throw new TypeError(`cannot canonicalize a ${typeof value}`);
}

export const canonicalBytes = (value) => new TextEncoder().encode(canonicalize(value));
