import { executionIdFor } from '../../libs/contract/src/index.js';
import { PunctualClient } from '@punctual/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { ensureCliBuilt, runCli } from './run-cli.js';

describe('punctual explain', () => {
  const ctx = useApiSandbox();
  const admin = () => new PunctualClient({ baseUrl: ctx.api.base, apiKey: ctx.api.config.adminApiKey });
  const cli = (args: string[], key = ctx.api.config.adminApiKey) =>
    runCli(args, { PUNCTUAL_URL: ctx.api.base, PUNCTUAL_API_KEY: key });

  beforeAll(() => ensureCliBuilt(), 300_000);

  /** A Berlin task every day at 09:00 since a week ago, whose slots of the last three days are given rows. */
  async function weekOld(name: string, statuses: ('succeeded' | 'skipped')[]) {
    await admin().tasks.create({ name, handler: 'noop', schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' } });
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name } });
    const created = new Date('2026-01-01T00:00:00Z');
    await ctx.db.prisma.task.update({ where: { name }, data: { createdAt: created } });
    await ctx.db.prisma
      .$executeRaw`UPDATE audit_log SET at = ${created}, after = jsonb_set(after, '{createdAt}', '"2026-01-01T00:00:00.000Z"') WHERE target = ${name}`;
    // 2026-03-10 … 2026-03-12, 09:00 in Berlin (UTC+1).
    for (const [i, status] of statuses.entries()) {
      const slot = new Date(Date.UTC(2026, 2, 10 + i, 8));
      await ctx.db.historyAt(slot);
      await ctx.db.prisma.taskExecution.create({
        data: {
          id: executionIdFor(slot),
          taskId: task.id,
          taskName: name,
          scheduledFor: slot,
          fireAt: slot,
          taskVersion: 1,
          status,
          attempt: status === 'succeeded' ? 1 : 0,
          skipReason: status === 'skipped' ? 'paused' : null,
          startedAt: status === 'succeeded' ? slot : null,
          finishedAt: new Date(slot.getTime() + 1_000),
        },
      });
    }
  }

  it('prints one line per slot in the task zone (--all) and exits 0 when every slot succeeded; folds slots alike', async () => {
    await weekOld('explain-ok', ['succeeded', 'succeeded', 'succeeded']);
    const range = ['--from', '2026-03-10T00:00:00Z', '--to', '2026-03-12T23:00:00Z'];
    const folded = await cli(['explain', 'explain-ok', ...range]);
    expect(folded.code, folded.stderr).toBe(0);
    expect(folded.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^Tue 2026-03-10 09:00 Europe\/Berlin … Thu 2026-03-12 09:00 Europe\/Berlin {2}ran ×3 — the first: started 2026-03-10 09:00:00/,
      ),
    ]);
    const out = await cli(['explain', 'explain-ok', ...range, '--all']);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^Tue 2026-03-10 09:00 Europe\/Berlin {2}ran — started 2026-03-10 09:00:00, succeeded 2026-03-10 09:00:01$/,
    );
    expect(lines[2]).toMatch(/^Thu 2026-03-12 09:00 Europe\/Berlin {2}ran/);
  });

  it('exits 3 when a slot did not succeed, and says why; --at answers about the nearest slot', async () => {
    await weekOld('explain-skipped', ['succeeded', 'skipped', 'succeeded']);
    const out = await cli([
      'explain',
      'explain-skipped',
      '--from',
      '2026-03-10T00:00:00Z',
      '--to',
      '2026-03-12T23:00:00Z',
    ]);
    expect(out.code).toBe(3);
    expect(out.stdout.trim().split('\n')[1]).toMatch(
      /^Wed 2026-03-11 09:00 Europe\/Berlin {2}skipped — the task was paused/,
    );

    const at = await cli(['explain', 'explain-skipped', '--at', '2026-03-11T10:40:00+01:00']);
    expect(at.code).toBe(3);
    expect(at.stdout.trim().split('\n')).toHaveLength(1);
    expect(at.stdout).toMatch(/^Wed 2026-03-11 09:00 Europe\/Berlin {2}skipped/);
    const good = await cli(['explain', 'explain-skipped', '--at', '2026-03-12T07:00:00Z']);
    expect(good.code).toBe(0);
    expect(good.stdout).toMatch(/^Thu 2026-03-12 09:00 Europe\/Berlin {2}ran/);

    const json = JSON.parse(
      (await cli(['explain', 'explain-skipped', '--at', '2026-03-11T08:00:00Z', '-o', 'json'])).stdout,
    );
    expect(json.items).toEqual([
      expect.objectContaining({ scheduledFor: '2026-03-11T08:00:00.000Z', outcome: 'skipped', reason: 'paused' }),
    ]);
  });

  it('by default explains the day since the task was created, folded, and exits 0 when nothing failed', async () => {
    await admin().tasks.create({ name: 'explain-young', handler: 'noop', schedule: { cron: '*/5 * * * * *' } });
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'explain-young' } });
    const created = new Date(Math.floor((Date.now() - 120_000) / 5_000) * 5_000 - 1);
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { createdAt: created } });
    await ctx.db.prisma.$executeRaw`
      UPDATE audit_log SET at = ${created}, after = jsonb_set(after, '{createdAt}', to_jsonb(${created.toISOString()}::text))
      WHERE target = 'explain-young'`;
    // Every slot due 40 s ago or more ran; the newer ones are planned (waiting to start, or to come).
    const slots: Date[] = [];
    const planned: Date[] = [];
    for (let at = created.getTime() + 1; at < Date.now() + 60_000; at += 5_000)
      (at < Date.now() - 40_000 ? slots : planned).push(new Date(at));
    await ctx.db.historyAt(slots[0]!);
    const row = (slot: Date, ran: boolean) => ({
      id: executionIdFor(slot),
      taskId: task.id,
      taskName: 'explain-young',
      scheduledFor: slot,
      fireAt: slot,
      taskVersion: 1,
      status: ran ? ('succeeded' as const) : ('scheduled' as const),
      attempt: ran ? 1 : 0,
      startedAt: ran ? slot : null,
      finishedAt: ran ? new Date(slot.getTime() + 10) : null,
    });
    await ctx.db.prisma.taskExecution.createMany({
      data: [...slots.map((s) => row(s, true)), ...planned.map((s) => row(s, false))],
    });
    const out = await cli(['explain', 'explain-young']);
    expect(out.code, out.stdout.slice(0, 2_000)).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(3);
    expect(lines[0]).toMatch(new RegExp(`ran ×${slots.length} — `));
    expect(out.stdout).not.toContain('created later');
  });

  it('reports a bad range as the API refuses it, and a bad instant as bad usage', async () => {
    await weekOld('explain-bad', []);
    const range = await cli([
      'explain',
      'explain-bad',
      '--from',
      '2026-03-01T00:00:00Z',
      '--to',
      '2026-05-01T00:00:00Z',
    ]);
    expect(range.code).toBe(1);
    expect(range.stderr).toContain('to');
    expect(range.stderr).toContain('31 days');
    expect((await cli(['explain', 'explain-bad', '--at', 'tuesday'])).code).toBe(2);
    expect((await cli(['explain', 'nobody-has-this-name'])).code).toBe(1);
  });
});
