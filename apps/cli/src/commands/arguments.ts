import { Instant } from '@punctual/contract';
import { InvalidArgumentError } from 'commander';

/** `--count 5`: a whole number of at least 1 (anything else is bad usage). */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('must be a whole number of at least 1');
  return n;
}

/** `--payload '{"reason":"re-run"}'`: a JSON object. */
export function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new InvalidArgumentError('must be a JSON object, e.g. \'{"reason":"re-run"}\'');
  return parsed as Record<string, unknown>;
}

/** `--from 2026-06-01T00:00:00Z`: an instant with an offset, as the contract reads one. */
export function instant(value: string): string {
  const parsed = Instant.safeParse(value);
  if (!parsed.success) throw new InvalidArgumentError(parsed.error.issues[0]!.message);
  return parsed.data;
}
