/** One reading of the reference clock, and when it was asked and answered on the local clock. */
export interface ClockSample {
  sentAt: number;
  reference: number;
  receivedAt: number;
}

/**
 * The reference clock's lead over the local one (ms), from a few round trips: each sample says the
 * reference read `reference` somewhere between `sentAt` and `receivedAt`; the sample with the
 * shortest round trip bounds that best, and its midpoint is the estimate (NTP's rule).
 */
export function offsetFromSamples(samples: ClockSample[]): number {
  if (samples.length === 0) throw new Error('no clock samples');
  const best = samples.reduce((a, b) => (b.receivedAt - b.sentAt < a.receivedAt - a.sentAt ? b : a));
  return Math.round(best.reference - (best.sentAt + best.receivedAt) / 2);
}

/** Takes `count` samples of `readReference` one after another. */
export async function sampleClock(
  readReference: () => Promise<Date>,
  count = 5,
  now: () => number = Date.now,
): Promise<ClockSample[]> {
  const samples: ClockSample[] = [];
  for (let i = 0; i < count; i += 1) {
    const sentAt = now();
    const reference = (await readReference()).getTime();
    samples.push({ sentAt, reference, receivedAt: now() });
  }
  return samples;
}
