// How a stored key, value or header is shown: JSON pretty-printed, text as text, anything
// else as hex. The page asks the API for raw bytes (format=binary, base64) and decides here,
// so a JSON value, a UTF-8 string and a binary blob each look like what they are.
import { plural } from "./dom.js";

const HEX_LIMIT = 512;

export function base64Bytes(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i += 1) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

export function hex(bytes) {
  const shown = Array.from(bytes.subarray(0, HEX_LIMIT), (b) => b.toString(16).padStart(2, "0"));
  const lines = [];
  for (let i = 0; i < shown.length; i += 16) lines.push(shown.slice(i, i + 16).join(" "));
  if (bytes.length > HEX_LIMIT) lines.push(`… ${plural(bytes.length - HEX_LIMIT, "more byte")}`);
  return lines.join("\n");
}

/** {kind: "null"|"json"|"text"|"binary", text} for bytes given as base64 (null: a null key/value). */
export function render(base64) {
  if (base64 === null || base64 === undefined) return { kind: "null", text: "null" };
  const bytes = base64Bytes(base64);
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { kind: "binary", text: hex(bytes) };
  }
  if (/[\u0000-\u0008\u000e-\u001f]/.test(text)) return { kind: "binary", text: hex(bytes) };
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return { kind: "json", text: JSON.stringify(JSON.parse(trimmed), null, 2) };
    } catch {
      return { kind: "text", text };
    }
  }
  return { kind: "text", text };
}

/** The data field of a read record's key or value ({type, data}) as base64, whatever type it came in. */
export function dataOf(field) {
  if (field === null || field === undefined || field.data === null || field.data === undefined) return null;
  if (field.type === "BINARY" || field.type === undefined) return field.data;
  const text = field.type === "JSON" ? JSON.stringify(field.data) : String(field.data);
  const bytes = new TextEncoder().encode(text);
  return btoa(String.fromCharCode(...bytes));
}

export function textToBase64(text) {
  const bytes = new TextEncoder().encode(text);
  let raw = "";
  for (const byte of bytes) raw += String.fromCharCode(byte);
  return btoa(raw);
}
