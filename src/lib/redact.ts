/**
 * Secret redaction and size bounds for text that is stored (the API log). Two rules, applied to JSON bodies,
 * query strings and paths:
 * - by name: the value of any field whose name looks like a secret (`secret`, `api_key_secret`, `password`,
 *   `client_secret`, `access_token`, `csrf_token`, `private_key`, `authorization`, `invite_code`, `totp_code`,
 *   `recovery_codes`, `otpauth_url`, `qr_code`, ...) is
 *   replaced, whatever its type;
 * - by value: any string that contains the caller's own bearer key, or something shaped like a Gatehouse key
 *   (`gh_`, maybe a region and `_`, then 43 base64url characters), has that part replaced, wherever it appears.
 */
export const REDACTED = "[REDACTED]";

const SENSITIVE_NAME =
  /(^|_)(secret|password|passwd|passphrase|token|private_key|credentials?|authorization|cookie|api_?key|invite_code|recovery_codes?|totp_code|otpauth_url|qr_code|code_verifier|nonce)(_|$)/;
// Identifiers and descriptions of secrets are not secrets: `api_key_id`, `token_type`, `secret_prefix`.
const HARMLESS_SUFFIX = /_(id|ids|type|prefix|name|expires_at|created_at)$/;
/** What a secret field's name contains, in any case and with `_` or `-` between its words. */
const SENSITIVE_WORDS =
  "secret|passw|passphrase|token|private[_-]?key|credential|authorization|cookie|api[_-]?key|invite[_-]?code|recovery[_-]?code|totp[_-]?code|otpauth|qr[_-]?code|code[_-]?verifier|nonce";
/**
 * A cheap first pass on raw JSON text: only text that may hold a secret is parsed and walked. The words alone are
 * tried first: a scan for them is about 5 times as fast as the pattern of a name, which backtracks through every
 * string of the text (15 against 73 µs over a 45 KB page of 100 users).
 */
const SENSITIVE_WORD = new RegExp(SENSITIVE_WORDS, "i");
const SENSITIVE_NAME_IN_TEXT = new RegExp(`"[^"]*(${SENSITIVE_WORDS})[^"]*"\\s*:`, "i");
const GATEHOUSE_KEY = /gh_(?:[a-z0-9]{1,16}_)?[A-Za-z0-9_-]{43}/g;

export function isSensitiveName(name: string): boolean {
  const normalized = name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/-/g, "_");
  return SENSITIVE_NAME.test(normalized) && !HARMLESS_SUFFIX.test(normalized);
}

/** Literal values to hide wherever they appear: the caller's key, raw and as it looks inside JSON or a URL. */
export function secretValues(bearer: string | undefined): string[] {
  if (bearer === undefined || bearer.length < 8) return [];
  return [...new Set([bearer, JSON.stringify(bearer).slice(1, -1), encodeURIComponent(bearer)])];
}

/** Plain text (a path, a body that is not JSON) with secret values redacted. */
export function redactText(value: string, secrets: readonly string[]): string {
  let out = value.replace(GATEHOUSE_KEY, REDACTED);
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

function redactValue(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === "string") return redactText(value, secrets);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, secrets));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [name, item] of Object.entries(value)) {
      out[name] = item !== null && isSensitiveName(name) ? REDACTED : redactValue(item, secrets);
    }
    return out;
  }
  return value;
}

function mayHoldSecret(text: string, secrets: readonly string[]): boolean {
  GATEHOUSE_KEY.lastIndex = 0;
  return (
    (SENSITIVE_WORD.test(text) && SENSITIVE_NAME_IN_TEXT.test(text)) ||
    (text.includes("gh_") && GATEHOUSE_KEY.test(text)) ||
    secrets.some((secret) => text.includes(secret))
  );
}

/** JSON text with secrets redacted; text that is not JSON gets the by-value rule only. */
export function redactJsonText(text: string, secrets: readonly string[]): string {
  if (!mayHoldSecret(text, secrets)) return text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return redactText(text, secrets);
  }
  return JSON.stringify(redactValue(parsed, secrets));
}

/** A query string (without `?`) with secret-looking parameters and secret values redacted. */
export function redactQuery(query: string, secrets: readonly string[]): string {
  if (query === "") return query;
  const params = new URLSearchParams(query);
  let changed = false;
  const out = new URLSearchParams();
  for (const [name, value] of params) {
    const safeName = redactText(name, secrets);
    const safe = isSensitiveName(name) ? REDACTED : redactText(value, secrets);
    if (safe !== value || safeName !== name) changed = true;
    out.append(safeName, safe);
  }
  // Kept byte for byte unless something was hidden.
  return changed ? out.toString() : query;
}

/**
 * Text cut to at most `maxBytes` UTF-8 bytes (never inside a character), followed by a marker that says how long
 * the original was.
 */
export function truncateText(text: string, maxBytes: number): string {
  const size = Buffer.byteLength(text, "utf8");
  if (size <= maxBytes) return text;
  const head = Buffer.from(text, "utf8")
    .subarray(0, maxBytes)
    .toString("utf8")
    .replace(/\uFFFD+$/, "");
  return `${head}…[truncated by Gatehouse: ${size} bytes in total]`;
}
