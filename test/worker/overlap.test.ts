import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, TERMINAL } from '../support/cluster.js';
import { sleep } from '../support/processes.js';

type Row = Awaited<ReturnType<Cluster['executionsOf']>>[number];

/**
 * Runs whose [started, finished) intervals intersect: two runs of one task at the same time. A claim
 * that waited on the unique index for its predecessor's commit carries a `now()` taken a few ms
 * before that commit, hence the tolerance.
 */
function overlapping(rows: Row[]): number {
  const runs = rows
    .filter((r) => r.started_at && r.finished_at && r.status !== 'skipped')
    .sort((a, b) => a.started_at!.getTime() - b.started_at!.getTime());
  let count = 0;
  for (let i = 1; i < runs.length; i += 1)
    if (runs[i]!.started_at!.getTime() < runs[i - 1]!.finished_at!.getTime() - 100) count += 1;
  return count;
}

const count = (rows: Row[], key: string) =>
  rows.filter((r) => (r.skip_reason ? `${r.status}:${r.skip_reason}` : r.status) === key).length;

describe('overlap policies against a handler slower than its schedule (2.5 s every second)', () => {
  let cluster: Cluster;
  const rows: Record<string, Row[]> = {};

  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 2, api: true });
    for (const overlap of ['skip', 'allow', 'buffer_one', 'replace']) {
      const res = await cluster.call('POST', '/v1/tasks', {
        name: `slow-${overlap}`,
        handler: 'sleep',
        payload: { ms: 2500 },
        schedule: { cron: '* * * * * *' },
        policy: { overlap, retry: { attempts: 1 } },
      });
      expect(res.status).toBe(201);
    }
    await sleep(8_000);
    for (const overlap of ['skip', 'allow', 'buffer_one', 'replace'])
      await cluster.call('POST', `/v1/tasks/slow-${overlap}/pause`);
    // What started finishes (2.5 s), what waited ends skipped.
    for (const overlap of ['skip', 'allow', 'buffer_one', 'replace']) {
      rows[overlap] = await cluster.waitFor(
        async () => {
          const all = await cluster.executionsOf(`slow-${overlap}`);
          return all.every((e) => TERMINAL.includes(e.status)) && all;
        },
        20_000,
        `every run of slow-${overlap} to end`,
      );
    }
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('allow: runs overlap, every slot runs', () => {
    const r = rows.allow!;
    expect(overlapping(r)).toBeGreaterThan(2);
    expect(count(r, 'skipped:overlap')).toBe(0);
    expect(count(r, 'succeeded')).toBeGreaterThanOrEqual(5);
  });

  it('skip: never two at once; slots that find one running are skipped(overlap)', () => {
    const r = rows.skip!;
    expect(overlapping(r)).toBe(0);
    expect(count(r, 'skipped:overlap')).toBeGreaterThanOrEqual(3);
    expect(count(r, 'succeeded')).toBeGreaterThanOrEqual(2);
  });

  it('buffer_one: never two at once; one waits and starts as the running one ends; others skipped', () => {
    const r = rows.buffer_one!;
    expect(overlapping(r)).toBe(0);
    const runs = r
      .filter((x) => x.status === 'succeeded')
      .sort((a, b) => a.started_at!.getTime() - b.started_at!.getTime());
    expect(runs.length).toBeGreaterThanOrEqual(3);
    // Each run after the first was the buffered one: its slot came while the run ahead still ran, and
    // it started once that run had ended — released by the end, not by a slot of its own.
    for (let i = 1; i < runs.length; i += 1) {
      expect(runs[i]!.scheduled_for.getTime()).toBeLessThan(runs[i - 1]!.finished_at!.getTime());
      expect(runs[i]!.started_at!.getTime()).toBeGreaterThanOrEqual(runs[i - 1]!.finished_at!.getTime() - 100);
    }
    expect(count(r, 'skipped:overlap')).toBeGreaterThanOrEqual(2);
  });

  it('replace: the running one is cancelled and the newcomer runs; never two at once', () => {
    const r = rows.replace!;
    expect(count(r, 'cancelled')).toBeGreaterThanOrEqual(4);
    expect(count(r, 'skipped:overlap')).toBe(0);
    expect(overlapping(r.filter((x) => x.status !== 'cancelled'))).toBe(0);
    for (const cancelled of r.filter((x) => x.status === 'cancelled')) expect(cancelled.started_at).not.toBeNull();
  });
});
