import { formatOffset, offsetMinutes } from './time.js';

/** One upcoming fire time, and whether the zone's clocks change between it and the one before. */
export interface FireTimeRow {
  at: string;
  /** The zone's offset from UTC at this fire time, in minutes. */
  offset: number;
  /** Set when the offset differs from the previous fire time's (or from `since`, for the first). */
  transition: { from: number; to: number; words: string } | null;
}

/**
 * Marks the daylight-saving transitions among `times` in `zone`: a fire time whose offset differs
 * from the one before it (the first is compared with the offset at `since`, i.e. now) comes after
 * the clocks moved, so its wall time may be shifted (a spring-forward gap) or follow the new offset.
 */
export function markTransitions(times: readonly string[], zone: string, since: Date): FireTimeRow[] {
  let previous = offsetMinutes(since, zone);
  return times.map((at) => {
    const offset = offsetMinutes(at, zone);
    const transition =
      offset === previous ? null : { from: previous, to: offset, words: transitionWords(previous, offset) };
    previous = offset;
    return { at, offset, transition };
  });
}

/** `clocks go forward 1 h (+01:00 → +02:00)`. */
export function transitionWords(from: number, to: number): string {
  const shift = Math.abs(to - from);
  const amount = shift % 60 === 0 ? `${shift / 60} h` : `${shift} min`;
  return `clocks go ${to > from ? 'forward' : 'back'} ${amount} (${formatOffset(from)} → ${formatOffset(to)})`;
}
