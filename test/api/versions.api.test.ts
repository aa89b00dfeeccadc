import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

interface Version {
  version: number;
  action: string;
  changedBy: string;
  reason: string | null;
  current: boolean;
  definition: { schedule: { cron?: string }; payload: Record<string, unknown>; paused: boolean };
}

describe('every version kept, any one restored: GET /v1/tasks/{name}/versions[/{version}] and POST /v1/tasks/{name}/rollback', () => {
  const ctx = useApiSandbox();
  const call = (method: string, path: string, body?: unknown) => ctx.api.call(method, path, body);

  it('keeps each change whole with who, when and why; diffs any two; a rollback makes a new version equal to an old one and fires as it did', async () => {
    const spec = {
      name: 'vs-report',
      handler: 'http',
      payload: { url: 'https://example.com/hook', token: 'first-secret' },
      secretFields: ['token'],
      schedule: { cron: '0 9 * * *' },
    };
    expect((await call('POST', '/v1/tasks', spec)).status).toBe(201);
    const v1Upcoming = (await call('GET', '/v1/tasks/vs-report?upcoming=10')).body.upcoming as string[];
    expect(
      (
        await call('PATCH', '/v1/tasks/vs-report?reason=move%20to%20the%20afternoon', {
          schedule: { cron: '0 15 * * *' },
          payload: { url: 'https://example.com/hook', token: 'second-secret' },
        })
      ).status,
    ).toBe(200);
    expect((await call('POST', '/v1/tasks/vs-report/pause')).status).toBe(200);
    expect((await call('POST', '/v1/tasks/vs-report/resume', {})).status).toBe(200);

    const page = await call('GET', '/v1/tasks/vs-report/versions');
    expect(page.status).toBe(200);
    const items = page.body.items as Version[];
    expect(items.map((v) => [v.version, v.action, v.current])).toEqual([
      [4, 'task.resume', true],
      [3, 'task.pause', false],
      [2, 'task.update', false],
      [1, 'task.create', false],
    ]);
    expect(items[2]).toMatchObject({ reason: 'move to the afternoon', changedBy: 'admin-api-key' });
    expect(items[2]!.definition.schedule.cron).toBe('0 15 * * *');
    expect(items[3]!.definition.payload).toEqual({ url: 'https://example.com/hook', token: '[redacted]' });
    expect(JSON.stringify(page.body)).not.toContain('secret"');
    // Paged newest first.
    const first = await call('GET', '/v1/tasks/vs-report/versions?limit=3');
    expect((first.body.items as Version[]).map((v) => v.version)).toEqual([4, 3, 2]);
    expect(
      (await call('GET', `/v1/tasks/vs-report/versions?limit=3&cursor=${first.body.nextCursor}`)).body.items.map(
        (v: Version) => v.version,
      ),
    ).toEqual([1]);

    const two = await call('GET', '/v1/tasks/vs-report/versions/2');
    expect(two.status).toBe(200);
    expect(two.body.against).toBe(1);
    expect(two.body.diff).toEqual(
      expect.arrayContaining([
        { field: 'schedule.cron', before: '0 9 * * *', after: '0 15 * * *', secret: false },
        { field: 'payload.token', before: null, after: null, secret: true },
      ]),
    );
    const against = await call('GET', '/v1/tasks/vs-report/versions/4?against=1');
    expect(against.body.diff.map((d: { field: string }) => d.field)).toEqual(
      expect.arrayContaining(['schedule.cron', 'payload.token']),
    );

    // A dry run of the rollback: what it would do, nothing stored.
    const dry = await call('POST', '/v1/tasks/vs-report/rollback', { version: 1, dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body).toMatchObject({ dryRun: true, schedule: { cron: '0 9 * * *' } });
    expect(dry.body.changes.fireTimes.after.slice(0, 10).map((f: { at: string }) => f.at)).toEqual(v1Upcoming);
    expect((await call('GET', '/v1/tasks/vs-report')).body.schedule.cron).toBe('0 15 * * *');

    const back = await call('POST', '/v1/tasks/vs-report/rollback', { version: 1, reason: 'the afternoon was wrong' });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body).toMatchObject({ version: 5, schedule: { cron: '0 9 * * *' } });
    expect((await call('GET', '/v1/tasks/vs-report?upcoming=10')).body.upcoming).toEqual(v1Upcoming);
    // The payload as it was, secret fields too (stored whole, shown redacted).
    expect((await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'vs-report' } })).payload).toEqual({
      url: 'https://example.com/hook',
      token: 'first-secret',
    });
    const latest = (await call('GET', '/v1/tasks/vs-report/versions?limit=1')).body.items[0] as Version;
    expect(latest).toMatchObject({
      version: 5,
      action: 'task.rollback',
      reason: 'the afternoon was wrong',
      current: true,
    });
    expect((await call('GET', '/v1/audit?target=vs-report&action=task.rollback')).body.items).toHaveLength(1);
  });

  it("keeps a deleted task's versions by name and restores it from one, numbering on", async () => {
    expect(
      (await call('POST', '/v1/tasks', { name: 'vs-gone', handler: 'noop', schedule: { cron: '*/5 * * * *' } })).status,
    ).toBe(201);
    expect((await call('PATCH', '/v1/tasks/vs-gone', { description: 'kept' })).status).toBe(200);
    expect((await call('DELETE', '/v1/tasks/vs-gone')).status).toBe(204);
    const kept = await call('GET', '/v1/tasks/vs-gone/versions');
    expect(kept.status).toBe(200);
    expect((kept.body.items as Version[]).map((v) => [v.version, v.current])).toEqual([
      [2, false],
      [1, false],
    ]);

    const restored = await call('POST', '/v1/tasks/vs-gone/rollback', { version: 2 });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body).toMatchObject({ name: 'vs-gone', description: 'kept', version: 3 });
    expect(restored.body.secret).toMatch(/\S{20,}/);
    expect((await call('GET', '/v1/tasks/vs-gone/versions?limit=1')).body.items[0]).toMatchObject({
      version: 3,
      action: 'task.restore',
      current: true,
    });
    // A new task of a name goes on from its last version too.
    expect((await call('DELETE', '/v1/tasks/vs-gone')).status).toBe(204);
    expect(
      (await call('POST', '/v1/tasks', { name: 'vs-gone', handler: 'noop', schedule: { cron: '0 * * * *' } })).body
        .version,
    ).toBe(4);
  });

  it('a rollback restores the definition, not whether the task runs: paused stays paused with its note, active stays active', async () => {
    const body = { name: 'vs-state', handler: 'noop', schedule: { cron: '0 9 * * *' } };
    expect((await call('POST', '/v1/tasks', body)).status).toBe(201);
    expect((await call('PATCH', '/v1/tasks/vs-state', { schedule: { cron: '0 15 * * *' } })).status).toBe(200);
    expect((await call('POST', '/v1/tasks/vs-state/pause', { note: 'vendor outage, INC-7' })).status).toBe(200);
    // Back to version 1 (active when kept): the definition comes back, the pause and its note stay.
    const back = await call('POST', '/v1/tasks/vs-state/rollback', { version: 1 });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body).toMatchObject({
      schedule: { cron: '0 9 * * *' },
      paused: true,
      pauseNote: 'vendor outage, INC-7',
    });
    expect(await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'vs-state' } })).toMatchObject({
      status: 'paused',
      pauseNote: 'vendor outage, INC-7',
    });
    // Resumed, then back to version 3 (paused when kept): it stays active.
    expect((await call('POST', '/v1/tasks/vs-state/resume', {})).status).toBe(200);
    const again = await call('POST', '/v1/tasks/vs-state/rollback', { version: 3 });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ schedule: { cron: '0 15 * * *' }, paused: false, status: 'active' });

    // A deleted `every` task restored keeps its phase: it is anchored at its first creation, not the restore.
    expect(
      (await call('POST', '/v1/tasks', { name: 'vs-every', handler: 'noop', schedule: { every: '7m' } })).status,
    ).toBe(201);
    const before = (await call('GET', '/v1/tasks/vs-every?upcoming=3')).body as {
      upcoming: string[];
      createdAt: string;
    };
    expect((await call('DELETE', '/v1/tasks/vs-every')).status).toBe(204);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await call('POST', '/v1/tasks/vs-every/rollback', { version: 1 })).status).toBe(200);
    const after = (await call('GET', '/v1/tasks/vs-every?upcoming=3')).body as {
      upcoming: string[];
      createdAt: string;
    };
    expect(after.createdAt).toBe(before.createdAt);
    expect(after.upcoming).toEqual(before.upcoming);
  });

  it('answers 404 with a code for a version the name never had, and for a name with none; 422 for a bad version number; nothing stored', async () => {
    expect(
      (await call('POST', '/v1/tasks', { name: 'vs-bad', handler: 'noop', schedule: { cron: '* * * * *' } })).status,
    ).toBe(201);
    const missing = await call('GET', '/v1/tasks/vs-bad/versions/9');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: 'not_found', message: 'no version 9 of task "vs-bad"' });
    expect((await call('GET', '/v1/tasks/vs-bad/versions/first')).status).toBe(404);
    expect((await call('GET', '/v1/tasks/vs-bad/versions/1?against=7')).status).toBe(404);
    expect((await call('GET', '/v1/tasks/never-named/versions')).status).toBe(404);
    const rollback = await call('POST', '/v1/tasks/vs-bad/rollback', { version: 9 });
    expect(rollback.status).toBe(404);
    expect(rollback.body.error.code).toBe('not_found');
    expect((await call('POST', '/v1/tasks/vs-bad/rollback', { version: 0 })).status).toBe(422);
    expect((await call('POST', '/v1/tasks/vs-bad/rollback', {})).status).toBe(400);
    expect((await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'vs-bad' } })).version).toBe(1);
    // The breaker's and the window's bounds: 422 naming the field, nothing stored.
    for (const [policy, field] of [
      [{ pauseAfter: { failures: 0, within: '1h' } }, 'policy.pauseAfter.failures'],
      [{ pauseAfter: { failures: 1_001, within: '1h' } }, 'policy.pauseAfter.failures'],
      [{ pauseAfter: { failures: 5, within: '0s' } }, 'policy.pauseAfter.within'],
    ] as const) {
      const res = await call('PATCH', '/v1/tasks/vs-bad', { policy });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
    }
    const window = await call('PATCH', '/v1/tasks/vs-bad', {
      schedule: { cron: '* * * * *', startAt: '2031-01-02T00:00:00Z', endAt: '2031-01-01T00:00:00Z' },
    });
    expect(window.status).toBe(422);
    expect(window.body.error.details.map((d: { field: string }) => d.field)).toEqual(['schedule.endAt']);
    expect((await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'vs-bad' } })).version).toBe(1);
    const ok = await call('PATCH', '/v1/tasks/vs-bad', { policy: { pauseAfter: { failures: 5, within: '1h' } } });
    expect(ok.body.policy.pauseAfter).toEqual({ failures: 5, within: '1h' });
  });
});
