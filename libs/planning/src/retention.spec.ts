import { describe, expect, it } from 'vitest';
import { PARTITION_WIDTHS_MS, partitionFor, RETENTION_MIN_MS, RetentionRules } from './retention.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const cluster = { historyMs: 30 * DAY, deadLettersMs: 90 * DAY, auditMs: 365 * DAY };
const now = new Date('2026-12-02T12:00:00Z');
const day = (iso: string) => ({ from: new Date(iso), to: new Date(new Date(iso).getTime() + DAY) });

describe('RetentionRules', () => {
  it('keeps a namespace as the cluster does unless it says otherwise, never under the floor', () => {
    const rules = new RetentionRules(
      cluster,
      [{ namespace: 'team-a', historyMs: 7 * DAY, deadLettersMs: null }],
      2 * HOUR,
    );
    expect(rules.of('default')).toEqual({ historyMs: 30 * DAY, deadLettersMs: 90 * DAY });
    expect(rules.of('team-a')).toEqual({ historyMs: 7 * DAY, deadLettersMs: 90 * DAY });
    // A task's maxDelay of 2 h raises a namespace's hour to two.
    const short = new RetentionRules({ ...cluster, historyMs: HOUR }, [], 2 * HOUR);
    expect(short.of('x').historyMs).toBe(2 * HOUR);
    expect(new RetentionRules({ ...cluster, historyMs: 1 }).of('x').historyMs).toBe(RETENTION_MIN_MS);
  });

  it('sizes partitions to a quarter of the shortest retention: a day for a month, a quarter of an hour for an hour', () => {
    expect(new RetentionRules(cluster).partitionWidthMs()).toBe(DAY);
    expect(new RetentionRules({ ...cluster, historyMs: DAY }).partitionWidthMs()).toBe(6 * HOUR);
    expect(new RetentionRules({ ...cluster, historyMs: HOUR }).partitionWidthMs()).toBe(15 * 60_000);
    const withShortNamespace = new RetentionRules(cluster, [
      { namespace: 'n', historyMs: 8 * HOUR, deadLettersMs: null },
    ]);
    expect(withShortNamespace.partitionWidthMs()).toBe(HOUR);
    for (const w of PARTITION_WIDTHS_MS) expect(DAY % w).toBe(0);
  });

  it('touches only partitions wholly before the live horizon: drops what is past every retention, trims what is past some', () => {
    const rules = new RetentionRules(cluster, [{ namespace: 'long', historyMs: 60 * DAY, deadLettersMs: null }]);
    const live = new Date('2026-12-02T00:00:00Z');
    expect(rules.decide(day('2026-12-02T00:00:00Z'), live, now)).toEqual({ kind: 'keep' });
    expect(rules.decide(day('2026-11-20T00:00:00Z'), live, now)).toEqual({ kind: 'keep' });
    // 31 days old: past the cluster's history, not its dead letters' nor the long namespace's.
    expect(rules.decide(day('2026-11-01T00:00:00Z'), live, now)).toEqual({ kind: 'trim' });
    // Past the dead letters' 90 days: nothing left to keep.
    expect(rules.decide(day('2026-08-01T00:00:00Z'), live, now)).toEqual({ kind: 'drop' });
    // A partition the horizon has not passed (everything may be live in it) is never dropped or swapped:
    // past a retention, its ended rows go one by one.
    expect(rules.decide(day('2026-08-01T00:00:00Z'), null, now)).toEqual({ kind: 'delete' });
    // …but the table as it was before partitioning waits for the horizon to pass it.
    expect(rules.decide({ from: null, to: new Date('2026-12-03T00:00:00Z') }, null, now)).toEqual({ kind: 'keep' });
    expect(rules.decide({ from: null, to: new Date('2026-08-01T00:00:00Z') }, live, now)).toEqual({ kind: 'drop' });
    expect(rules.decide(day('2026-08-01T00:00:00Z'), new Date('2026-08-01T12:00:00Z'), now)).toEqual({
      kind: 'delete',
    });
    expect(rules.decide(day('2026-12-02T00:00:00Z'), live, now)).toEqual({ kind: 'keep' });
    // A retention of an hour, and the day's partition (made when a month was kept) is 12 hours old.
    const hour = new RetentionRules({ ...cluster, historyMs: HOUR });
    expect(hour.decide(day('2026-12-02T00:00:00Z'), live, now)).toEqual({ kind: 'delete' });
  });

  it('says which rows are past their retention: ended ones by the history, dead letters by theirs, per namespace', () => {
    const rules = new RetentionRules(cluster, [{ namespace: 'short', historyMs: 2 * DAY, deadLettersMs: 3 * DAY }]);
    const ago = (days: number) => new Date(now.getTime() - days * DAY);
    expect(rules.isExpired('default', ago(31), false, now)).toBe(true);
    expect(rules.isExpired('default', ago(29), false, now)).toBe(false);
    expect(rules.isExpired('default', ago(31), true, now)).toBe(false);
    expect(rules.isExpired('default', ago(91), true, now)).toBe(true);
    expect(rules.isExpired('short', ago(2.5), false, now)).toBe(true);
    expect(rules.isExpired('short', ago(2.5), true, now)).toBe(false);
  });

  it('keeps the tables beside the history by their own rules', () => {
    const c = new RetentionRules(cluster).cutoffs(now);
    expect(now.getTime() - c.outbox.getTime()).toBe(30 * DAY);
    expect(now.getTime() - c.audit.getTime()).toBe(365 * DAY);
    expect(now.getTime() - c.leadership.getTime()).toBe(90 * DAY);
    expect(now.getTime() - c.flowStarts.getTime()).toBe(DAY);
    expect(now.getTime() - c.quotaStarts.getTime()).toBe(HOUR);
  });
});

describe('partitionFor', () => {
  it('aligns a partition on its width from the epoch, and fits it between its neighbours', () => {
    const at = new Date('2026-12-02T09:17:00Z');
    expect(partitionFor(at, DAY, null, null)).toEqual(day('2026-12-02T00:00:00Z'));
    expect(partitionFor(at, 15 * 60_000, null, null)).toEqual({
      from: new Date('2026-12-02T09:15:00Z'),
      to: new Date('2026-12-02T09:30:00Z'),
    });
    // A day partition after one that ends at 06:00 and before one that starts at 12:00.
    expect(partitionFor(at, DAY, new Date('2026-12-02T06:00:00Z'), new Date('2026-12-02T12:00:00Z'))).toEqual({
      from: new Date('2026-12-02T06:00:00Z'),
      to: new Date('2026-12-02T12:00:00Z'),
    });
  });
});
