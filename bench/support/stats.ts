/** Order statistics of a sample, in its unit. */
export interface Summary {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles (no interpolation): every figure is a value that was observed. */
export function summarize(values: number[]): Summary {
  if (values.length === 0) return { n: 0, p50: NaN, p99: NaN, max: NaN };
  const sorted = Float64Array.from(values).sort();
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
  return { n: sorted.length, p50: rank(0.5), p99: rank(0.99), max: sorted[sorted.length - 1]! };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every `everyMs` until it returns a truthy value; throws naming `what` after `timeoutMs`. */
export async function waitUntil<T>(probe: () => Promise<T | null | undefined | false>, timeoutMs: number, what: string, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A millisecond figure for the table. */
export const ms = (value: number) => (Number.isFinite(value) ? `${value < 10 ? value.toFixed(1) : Math.round(value)} ms` : '—');


