import { formatClock, formatInZone, formatSpan, localDate, zoneName } from '../format/time.js';

/** The run chart shows the last 24 hours. */
export const CHART_WINDOW_MS = 24 * 3_600_000;
/** The narrowest window the chart scales to: a single run is drawn in the ten minutes around it. */
export const MIN_WINDOW_MS = 10 * 60_000;
/** The room left either side of the runs, as a share of the time they span. */
const PADDING = 0.1;
const MINUTE = 60_000;

/** The instants the chart's time axis runs between (epoch milliseconds). */
export interface ChartWindow {
  from: number;
  to: number;
  /** True when scaled to the runs; false for the whole 24 hours. */
  scaled: boolean;
  /** From the first run to the last (0 without runs). */
  spanMs: number;
}

/**
 * The time axis for runs at `times` (epoch ms): the last 24 hours up to `now`, unless the runs
 * fill much less of it (a new task, a one-off). Then the axis fits them, with a tenth of their
 * span either side, whole minutes at the ends, at least {@link MIN_WINDOW_MS} wide, never before
 * the 24 hours the runs were asked for and never past `now` (the minute it is in): no stretch of
 * the future is drawn. A padded window of 24 hours or more is the full one.
 */
export function chartWindow(times: number[], now: number): ChartWindow {
  let first = Infinity;
  let last = -Infinity;
  for (const t of times) {
    if (!Number.isFinite(t)) continue;
    if (t < first) first = t;
    if (t > last) last = t;
  }
  const full: ChartWindow = {
    from: now - CHART_WINDOW_MS,
    to: now,
    scaled: false,
    spanMs: Number.isFinite(first) ? last - first : 0,
  };
  if (!Number.isFinite(first)) return full;
  const span = last - first;
  const pad = Math.max(span * PADDING, (MIN_WINDOW_MS - span) / 2);
  const end = Math.ceil(now / MINUTE) * MINUTE;
  const to = Math.min(Math.ceil((last + pad) / MINUTE) * MINUTE, end);
  // Held back at now, the window keeps its width by reaching further into the past.
  const from = Math.max(Math.min(Math.floor((first - pad) / MINUTE) * MINUTE, to - MIN_WINDOW_MS), full.from);
  if (to - from >= CHART_WINDOW_MS) return full;
  return { from, to, scaled: true, spanMs: span };
}

/**
 * The labels of the time axis at `ticks` (epoch ms, `stepMs` apart): the 24-hour wall clock in
 * `zone` (`09:00`; `09:00:30` when the ticks fall between minutes), with the local date under the
 * first tick and under the first tick of each new day (`00:00\n2026-03-30`).
 */
export function axisTimes(ticks: number[], stepMs: number, zone: string): string[] {
  const seconds = stepMs % MINUTE !== 0;
  let day: string | undefined;
  return ticks.map((tick) => {
    const date = localDate(new Date(tick), zone);
    const clock = formatClock(tick, zone, seconds);
    const label = date === day ? clock : `${clock}\n${date}`;
    day = date;
    return label;
  });
}

/** `GMT-4 (America/New_York)`, `GMT+1/GMT+2 (Europe/Berlin)` across a clock change, `UTC`: the zone of the axis. */
export function axisZone(shown: Pick<ChartWindow, 'from' | 'to'>, zone: string): string {
  const names = [...new Set([zoneName(shown.from, zone), zoneName(shown.to, zone)])].join('/');
  return names === zone ? zone : `${names} (${zone})`;
}

/** The sentence of the chart's summary that says which stretch of time it draws, in `zone`. */
export function windowWords(shown: ChartWindow, zone: string): string {
  const stretch = `${formatInZone(new Date(shown.from), zone)} to ${formatInZone(new Date(shown.to), zone)}`;
  if (!shown.scaled) return `The chart shows the whole 24 hours, ${stretch}.`;
  const span = shown.spanMs > 0 ? `, which span ${formatSpan(shown.spanMs)}` : '';
  return `The chart is scaled to the runs${span}: it shows ${stretch}.`;
}
