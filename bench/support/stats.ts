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

/** A millisecond figure for the table. */
export const ms = (value: number) =>
  Number.isFinite(value) ? `${value < 10 ? value.toFixed(1) : Math.round(value)} ms` : '—';
