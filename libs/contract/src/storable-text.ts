/**
 * Text Postgres cannot store: `text` and `jsonb` refuse U+0000, and `jsonb` refuses a lone UTF-16
 * surrogate (JSON.stringify writes it as `\ud800`, which Postgres rejects). A request holding
 * either is refused (422, naming the field); what a handler returns or throws is made storable.
 */
const NUL = '\u0000';
const REPLACEMENT = '\uFFFD';
/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** What makes a string unstorable, or null when Postgres takes it. */
export function unstorableReason(text: string): string | null {
  if (text.includes(NUL)) return 'holds a NUL character (U+0000), which cannot be stored';
  if (LONE_SURROGATE.test(text)) return 'holds a lone UTF-16 surrogate (half of a character), which cannot be stored';
  return null;
}

/** The first unstorable string in a JSON value (a value or a key), with its path, or null. */
export function findUnstorable(
  value: unknown,
  path: (string | number)[] = [],
): { path: (string | number)[]; reason: string } | null {
  if (typeof value === 'string') {
    const reason = unstorableReason(value);
    return reason ? { path, reason } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = findUnstorable(value[i], [...path, i]);
      if (found) return found;
    }
    return null;
  }
  for (const [key, child] of Object.entries(value)) {
    const keyReason = unstorableReason(key);
    if (keyReason) return { path: [...path, key], reason: `has a key that ${keyReason}` };
    const found = findUnstorable(child, [...path, key]);
    if (found) return found;
  }
  return null;
}

/** `text` as Postgres can store it: each NUL and each lone surrogate becomes U+FFFD. */
export function storableText(text: string): string {
  const whole = LONE_SURROGATE.test(text) ? text.replace(LONE_SURROGATES, REPLACEMENT) : text;
  return whole.includes(NUL) ? whole.replaceAll(NUL, REPLACEMENT) : whole;
}

/** The first `max` UTF-16 units of `text`, never ending on half of a character, made storable. */
export function storablePrefix(text: string, max: number): string {
  let cut = text.length <= max ? text : text.slice(0, max);
  const last = cut.charCodeAt(cut.length - 1);
  if (cut.length < text.length && last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return storableText(cut);
}

/** A JSON value with every string in it (values and keys) made storable; the same object when it already was. */
export function storableJson<T>(value: T): T {
  return findUnstorable(value) ? (rewrite(value) as T) : value;
}

function rewrite(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(rewrite);
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [storableText(key), rewrite(child)]));
}
