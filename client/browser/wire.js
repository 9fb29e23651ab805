// Decoding reports, the aggregator's side of the wire (shared/wire/, docs/protocol.md §4): the
// browser client only encodes, so no page loads this; the cross-language vectors check it.

import { ReportError } from "./randomness.js";

/** `length` bytes from exactly 2 * length lowercase hex digits, or ReportError. */
export function fromHex(text, length) {
  if (typeof text !== "string" || text.length !== 2 * length || /[^0-9a-f]/.test(text))
    throw new ReportError(`report must be ${2 * length} lowercase hex digits`);
  return Uint8Array.from({ length }, (_, i) => parseInt(text.substr(2 * i, 2), 16));
}

/**
 * The report a payload of `oracle` (a question's mechanism) encodes, or ReportError: its unsigned
 * big-endian `fields`, each below its bound, then its fromFields(); or its own fromBytes().
 */
export function decode(oracle, text) {
  const bytes = fromHex(text, oracle.reportBytes);
  if (oracle.fromBytes) return oracle.fromBytes(bytes);
  let at = 0;
  const values = oracle.fields.map(([width, upper]) => {
    const value = bytes.subarray(at, (at += width)).reduce((n, b) => n * 256 + b, 0);
    if (value < upper) return value;
    throw new ReportError(`${oracle.name} report: a field outside [0, ${upper})`);
  });
  return oracle.fromFields ? oracle.fromFields(values) : values;
}
