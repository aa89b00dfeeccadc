import { afterEach, describe, expect, it, vi } from 'vitest';
import { browserLocale, safeLocale } from '../format/time.js';
import { axisTimes, axisZone, CHART_WINDOW_MS, chartWindow, MIN_WINDOW_MS, windowWords } from './chart-window.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;
/** 2026-06-01 12:00:00 UTC. */
const NOW = Date.parse('2026-06-01T12:00:00Z');

describe('the locale the console formats with', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('keeps a locale Intl accepts, canonicalised', () => {
    for (const tag of ['en-US', 'de-DE', 'ja-JP', 'ar-EG', 'en-US-u-va-posix']) expect(safeLocale(tag)).toBe(tag);
    expect(safeLocale('EN-us')).toBe('en-US');
  });

  it('repairs a POSIX locale: no modifier, no codeset, hyphens', () => {
    expect(() => new Intl.NumberFormat('en-US@posix')).toThrow(RangeError);
    expect(safeLocale('en-US@posix')).toBe('en-US');
    expect(safeLocale('de_DE.UTF-8')).toBe('de-DE');
    expect(safeLocale('fr_FR.UTF-8@euro')).toBe('fr-FR');
  });

  it('falls back to the base language, then to the next candidate, then to en', () => {
    expect(safeLocale('de-DE-x-@@')).toBe('de');
    expect(safeLocale('C', 'pt-BR')).toBe('pt-BR');
    expect(safeLocale('zz-ZZ', 'ja-JP')).toBe('ja-JP');
    expect(safeLocale('C')).toBe('en');
    expect(safeLocale('POSIX')).toBe('en');
    expect(safeLocale(undefined, null, '', '  ')).toBe('en');
    expect(safeLocale()).toBe('en');
  });

  it('reads the browser: navigator.language when Intl accepts it, repaired when it does not', () => {
    vi.stubGlobal('navigator', { language: 'en-US@posix' });
    expect(browserLocale()).toBe('en-US');
    vi.stubGlobal('navigator', { language: 'ar-EG' });
    expect(browserLocale()).toBe('ar-EG');
    vi.stubGlobal('navigator', { language: '' });
    expect(() => new Intl.NumberFormat(browserLocale())).not.toThrow();
  });
});

describe('the stretch of time the run chart draws', () => {
  it('is the whole last 24 hours without runs, or when the runs fill most of it', () => {
    expect(chartWindow([], NOW)).toEqual({ from: NOW - CHART_WINDOW_MS, to: NOW, scaled: false, spanMs: 0 });
    // 23 h to 30 min ago: 22.5 h, padded past 24 h.
    const spread = chartWindow([NOW - 23 * HOUR, NOW - 12 * HOUR, NOW - 30 * MINUTE], NOW);
    expect(spread).toEqual({ from: NOW - CHART_WINDOW_MS, to: NOW, scaled: false, spanMs: 22.5 * HOUR });
  });

  it('fits runs spanning a couple of hours, with a tenth of their span either side, in whole minutes', () => {
    const times = [NOW - 3 * HOUR, NOW - 2 * HOUR, NOW - HOUR];
    const shown = chartWindow(times, NOW);
    expect(shown).toEqual({
      from: NOW - 3 * HOUR - 12 * MINUTE,
      to: NOW - HOUR + 12 * MINUTE,
      scaled: true,
      spanMs: 2 * HOUR,
    });
    for (const t of times) expect(t > shown.from && t < shown.to).toBe(true);
    const odd = chartWindow([NOW - 2 * HOUR + 17_321, NOW - 7_777], NOW);
    expect(odd.from % MINUTE).toBe(0);
    expect(odd.to % MINUTE).toBe(0);
    expect(odd.from).toBeLessThanOrEqual(NOW - 2 * HOUR + 17_321 - 0.1 * odd.spanMs);
    // Its padding would reach past now: it ends at now.
    expect(odd.to).toBe(NOW);
  });

  it('draws a single run, or runs at one instant, in the ten minutes around them', () => {
    const at = NOW - 5 * HOUR;
    expect(chartWindow([at], NOW)).toEqual({ from: at - 5 * MINUTE, to: at + 5 * MINUTE, scaled: true, spanMs: 0 });
    expect(chartWindow([at, at, at], NOW).to - chartWindow([at, at, at], NOW).from).toBe(MIN_WINDOW_MS);
    // Four minutes of runs: widened to ten, not a tenth either side.
    const short = chartWindow([at, at + 4 * MINUTE], NOW);
    expect(short.to - short.from).toBe(MIN_WINDOW_MS);
  });

  it('never draws the future: runs of the last three minutes are shown up to now, in a window as wide as they need', () => {
    const now = NOW + 20_000;
    const recent = chartWindow([now - 3 * MINUTE, now - 2 * MINUTE, now - 5_000], now);
    expect(recent).toEqual({
      from: NOW + MINUTE - MIN_WINDOW_MS,
      to: NOW + MINUTE,
      scaled: true,
      spanMs: 3 * MINUTE - 5_000,
    });
    // Its caption names exactly that stretch.
    expect(windowWords(recent, 'UTC')).toBe(
      'The chart is scaled to the runs, which span 2 min 55 s: it shows 2026-06-01 11:51:00 UTC to 2026-06-01 12:01:00 UTC.',
    );
  });

  it('never starts before the 24 hours the runs were asked for', () => {
    const shown = chartWindow([NOW - 23.9 * HOUR, NOW - 10 * HOUR], NOW);
    expect(shown.scaled).toBe(true);
    expect(shown.from).toBe(NOW - CHART_WINDOW_MS);
    expect(shown.to).toBe(NOW - 10 * HOUR + 84 * MINUTE);
  });

  it('ignores times that are not numbers', () => {
    expect(chartWindow([Number.NaN], NOW).scaled).toBe(false);
    expect(chartWindow([Number.NaN, NOW - HOUR], NOW)).toMatchObject({ scaled: true, spanMs: 0 });
  });

  it('says in words what it draws, in 24-hour times with the zone', () => {
    const scaled = chartWindow([NOW - 3 * HOUR, NOW - HOUR], NOW);
    expect(windowWords(scaled, 'Europe/Berlin')).toBe(
      'The chart is scaled to the runs, which span 2 h: it shows 2026-06-01 10:48:00 GMT+2 to 2026-06-01 13:12:00 GMT+2.',
    );
    expect(windowWords(chartWindow([NOW - HOUR], NOW), 'UTC')).toBe(
      'The chart is scaled to the runs: it shows 2026-06-01 10:55:00 UTC to 2026-06-01 11:05:00 UTC.',
    );
    expect(windowWords(chartWindow([], NOW), 'America/New_York')).toBe(
      'The chart shows the whole 24 hours, 2026-05-31 08:00:00 GMT-4 to 2026-06-01 08:00:00 GMT-4.',
    );
  });
});

describe('the time axis of the run chart', () => {
  it('labels ticks with the 24-hour clock of the zone, the date under the first tick and at midnight', () => {
    const ticks = [20, 22, 24, 26].map((h) => Date.parse('2026-06-01T00:00:00Z') + h * HOUR);
    expect(axisTimes(ticks, 2 * HOUR, 'UTC')).toEqual(['20:00\n2026-06-01', '22:00', '00:00\n2026-06-02', '02:00']);
    expect(axisTimes(ticks, 2 * HOUR, 'Asia/Tokyo')).toEqual(['05:00\n2026-06-02', '07:00', '09:00', '11:00']);
    for (const label of axisTimes(ticks, 2 * HOUR, 'America/Los_Angeles')) expect(label).not.toMatch(/am|pm/i);
  });

  it('shows seconds only when the ticks fall between minutes', () => {
    const start = Date.parse('2026-06-01T09:15:00Z');
    expect(axisTimes([start, start + 30_000], 30_000, 'UTC')).toEqual(['09:15:00\n2026-06-01', '09:15:30']);
    expect(axisTimes([start, start + 5 * MINUTE], 5 * MINUTE, 'UTC')).toEqual(['09:15\n2026-06-01', '09:20']);
  });

  it('names the zone, both of its names across a clock change', () => {
    expect(axisZone({ from: NOW - HOUR, to: NOW }, 'Europe/Berlin')).toBe('GMT+2 (Europe/Berlin)');
    expect(axisZone({ from: NOW - HOUR, to: NOW }, 'UTC')).toBe('UTC');
    const change = Date.parse('2026-03-29T01:00:00Z');
    expect(axisZone({ from: change - HOUR, to: change + HOUR }, 'Europe/Berlin')).toBe('GMT+1/GMT+2 (Europe/Berlin)');
  });
});
