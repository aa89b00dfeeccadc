import { InvalidScheduleError } from './errors.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * Parses a duration given as a string (`"250ms"`, `"30s"`, `"5m"`, `"1h"`, `"7d"`) or as whole
 * milliseconds. Throws {@link InvalidScheduleError} naming `field` for anything else.
 */
export function parseDuration(input: unknown, field = 'duration'): number {
  if (typeof input === 'number') {
    if (Number.isSafeInteger(input) && input >= 0) return input;
    throw new InvalidScheduleError(field, `${field} must be a non-negative whole number of milliseconds`);
  }
  if (typeof input === 'string') {
    const match = DURATION.exec(input.trim());
    if (match) {
      const ms = Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
      if (Number.isSafeInteger(ms)) return ms;
    }
  }
  throw new InvalidScheduleError(field, `${field} must be a duration such as "250ms", "30s", "5m", "1h", "7d" or whole milliseconds`);
}

/** Formats milliseconds as the shortest exact duration string (`3600000` → `"1h"`). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
