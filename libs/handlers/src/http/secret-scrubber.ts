import { REDACTED } from '@punctual/contract';

// Shorter values would blank out ordinary words; a secret that short is not one worth the name.
const MIN_SECRET_LENGTH = 4;

/**
 * A function that blanks out, in a text about to become an error message or a log field, every
 * value at the payload's `secretFields` paths (DESIGN.md §8), then whatever `redactSigningSecret`
 * blanks (the task's signing secret, which the handler does not hold: see `RequestSigner.redact`).
 * When the URL itself is a secret field its host is blanked too: messages name the host, never the
 * full URL.
 */
export function secretScrubber(
  payload: unknown,
  secretFields: readonly string[],
  url: URL | undefined,
  redactSigningSecret: (text: string) => string,
): (text: string) => string {
  const values = new Set<string>();
  for (const path of secretFields) collect(valueAt(payload, path), values);
  if (url && secretFields.includes('url')) [url.host, url.hostname].forEach((part) => values.add(part));
  // The payload's values first: one that holds the signing secret is blanked whole.
  const blankFields = redactor(values);
  return (text) => redactSigningSecret(blankFields(text));
}

/** Blanks every one of `values` long enough to be a secret out of a text, longest first (a secret that contains another is blanked whole). */
export function redactor(values: Iterable<string>): (text: string) => string {
  const needles = [...new Set(values)].filter((v) => v.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  return (text) => needles.reduce((out, needle) => out.replaceAll(needle, REDACTED), text);
}

function valueAt(payload: unknown, path: string): unknown {
  let node = payload;
  for (const part of path.split('.'))
    node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
  return node;
}

function collect(value: unknown, into: Set<string>): void {
  if (typeof value === 'string' || typeof value === 'number') into.add(String(value));
  else if (value !== null && typeof value === 'object') Object.values(value).forEach((v) => collect(v, into));
}
