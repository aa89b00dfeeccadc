import { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BEST_EFFORT_SITES, bestEffort } from './best-effort.js';
import { Metrics } from './metrics.js';

/** `punctual_best_effort_failures_total{site}` as a scrape of `metrics` reads it. */
async function failures(metrics: Metrics, site: string): Promise<number> {
  const line = (await metrics.registry.metrics())
    .split('\n')
    .find((l) => l.startsWith(`punctual_best_effort_failures_total{site="${site}"} `));
  return Number(line?.split(' ')[1]);
}

describe('bestEffort', () => {
  afterEach(() => vi.restoreAllMocks());

  it('resolves what the work resolves, and neither logs nor counts', async () => {
    const metrics = new Metrics();
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const before = await failures(metrics, 'worker.announce');
    await expect(bestEffort(Promise.resolve(7), 'worker.announce')).resolves.toBe(7);
    expect(warn).not.toHaveBeenCalled();
    expect(await failures(metrics, 'worker.announce')).toBe(before);
  });

  it('never throws: a failure resolves undefined, is logged with its site and error, and is counted under its site', async () => {
    const metrics = new Metrics();
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const before = {
      withdraw: await failures(metrics, 'worker.withdraw'),
      announce: await failures(metrics, 'worker.announce'),
    };
    const error = new Error('connection lost');

    await expect(bestEffort(Promise.reject(error), 'worker.withdraw')).resolves.toBeUndefined();
    await expect(bestEffort(Promise.reject('not even an Error'), 'worker.withdraw')).resolves.toBeUndefined();

    expect(warn).toHaveBeenCalledTimes(2);
    expect(warn.mock.calls[0]).toEqual([
      { site: 'worker.withdraw', err: error },
      `worker.withdraw failed: ${BEST_EFFORT_SITES['worker.withdraw']}`,
    ]);
    expect(warn.mock.calls[1]![0]).toEqual({ site: 'worker.withdraw', err: 'not even an Error' });
    expect(await failures(metrics, 'worker.withdraw')).toBe(before.withdraw + 2);
    expect(await failures(metrics, 'worker.announce')).toBe(before.announce);
  });

  it('exports a series of every site from the start, at zero until one fails (rate() sees the first failure)', async () => {
    const text = await new Metrics().registry.metrics();
    expect(text).toContain('# TYPE punctual_best_effort_failures_total counter');
    for (const site of Object.keys(BEST_EFFORT_SITES))
      expect(text).toMatch(
        new RegExp(`^punctual_best_effort_failures_total\\{site="${site.replace('.', '\\.')}"\\} \\d+$`, 'm'),
      );
  });

  it('takes only the sites of its table: the label stays bounded', async () => {
    // @ts-expect-error a site missing from BEST_EFFORT_SITES does not compile
    await bestEffort(Promise.resolve(), 'somewhere.new');
  });

  it('counts in every registry of the process: the counter is one, the registries many', async () => {
    const [a, b] = [new Metrics(), new Metrics()];
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const before = await failures(b, 'clock.publish-offset');
    await bestEffort(Promise.reject(new Error('down')), 'clock.publish-offset');
    expect(await failures(a, 'clock.publish-offset')).toBe(before + 1);
    expect(await failures(b, 'clock.publish-offset')).toBe(before + 1);
  });
});
