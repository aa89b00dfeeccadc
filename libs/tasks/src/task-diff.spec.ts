import { describe, expect, it } from 'vitest';
import { diffTasks, fieldChanges, type TaskState } from './task-diff.js';

const MANAGER = 'punctual-apply';

function task(name: string, extra: Partial<TaskState> = {}): TaskState {
  return {
    name,
    description: null,
    handler: 'noop',
    payload: {},
    secretFields: [],
    schedule: { cron: '0 9 * * *', timezone: 'UTC', startAt: null, endAt: null, remainingRuns: null, jitter: '0s' },
    policy: {
      overlap: 'skip',
      misfire: 'run_once',
      maxDelay: '1h',
      retry: { attempts: 3, backoff: '30s', maxBackoff: '1h' },
      timeout: '5m',
      concurrency: null,
      rateLimit: null,
      pauseAfter: null,
    },
    notify: { url: null, on: ['dead'] },
    paused: false,
    labels: {},
    managedBy: MANAGER,
    slo: null,
    ...extra,
  };
}

const plan = (desired: TaskState[], current: TaskState[], prune = false) =>
  diffTasks(desired, current, { managedBy: MANAGER, prune });
const actions = (diff: ReturnType<typeof plan>) => diff.items.map((i) => `${i.action} ${i.name}`);

describe('diffTasks', () => {
  it('creates what is absent, updates what differs and leaves what is equal', () => {
    const diff = plan([task('a'), task('b', { handler: 'http' }), task('c')], [task('b'), task('c')]);
    expect(actions(diff)).toEqual(['create a', 'update b', 'unchanged c']);
    expect(diff.items[1]!.changes).toEqual([{ field: 'handler', before: 'noop', after: 'http', secret: false }]);
    expect(diff.notManaged).toEqual([]);
  });

  it('is empty when desired and current agree, whatever the order of object keys', () => {
    const current = task('a', { payload: { b: [{ y: 1, x: 2 }], a: 1 }, labels: { team: 'x', env: 'prod' } });
    const desired = task('a', { payload: { a: 1, b: [{ x: 2, y: 1 }] }, labels: { env: 'prod', team: 'x' } });
    expect(plan([desired], [current]).items).toEqual([{ name: 'a', action: 'unchanged', changes: [] }]);
  });

  it('names changed leaves by path, new ones without `before` and gone ones without `after`', () => {
    const current = task('a', {
      schedule: { ...task('a').schedule, cron: '0 9 * * *' },
      labels: { team: 'x', old: '1' },
      payload: { headers: { accept: 'json' } },
    });
    const desired = task('a', {
      schedule: { ...task('a').schedule, cron: '*/5 * * * *' },
      labels: { team: 'y' },
      payload: { headers: { accept: 'json', host: 'h' } },
    });
    expect(fieldChanges(current, desired)).toEqual([
      { field: 'payload.headers.host', after: 'h', secret: false },
      { field: 'schedule.cron', before: '0 9 * * *', after: '*/5 * * * *', secret: false },
      { field: 'labels.team', before: 'x', after: 'y', secret: false },
      { field: 'labels.old', before: '1', secret: false },
    ]);
  });

  it('treats an empty object and an absent one alike', () => {
    expect(fieldChanges(task('a', { payload: {} }), task('a', { payload: {}, labels: {} }))).toEqual([]);
  });

  it('never shows the values of secret payload fields, named on either side, nor of what holds them', () => {
    const current = task('a', {
      payload: { token: 'old-secret', headers: { authorization: 'Bearer old' } },
      secretFields: ['token'],
    });
    const desired = task('a', {
      payload: { token: 'new-secret', headers: { authorization: 'Bearer new' } },
      secretFields: ['headers.authorization'],
    });
    const changes = fieldChanges(current, desired);
    expect(changes).toEqual([
      { field: 'payload.token', before: null, after: null, secret: true },
      { field: 'payload.headers.authorization', before: null, after: null, secret: true },
      { field: 'secretFields', before: ['token'], after: ['headers.authorization'], secret: false },
    ]);
    expect(JSON.stringify(changes)).not.toMatch(/old-secret|new-secret|Bearer/);
    const wholeObject = fieldChanges(
      task('a', { payload: { auth: 'x' } }),
      task('a', { payload: { auth: { user: 'u', pass: 'p' } }, secretFields: ['auth'] }),
    );
    expect(wholeObject.filter((c) => c.field.startsWith('payload.'))).toEqual([
      { field: 'payload.auth.user', after: null, secret: true },
      { field: 'payload.auth.pass', after: null, secret: true },
      { field: 'payload.auth', before: null, secret: true },
    ]);
  });

  it('deletes with prune only the tasks the same manager manages and the file leaves out', () => {
    const current = [
      task('kept'),
      task('gone-b'),
      task('gone-a'),
      task('mine-too', { managedBy: 'other-repo' }),
      task('by-hand', { managedBy: null }),
    ];
    expect(actions(plan([task('kept')], current))).toEqual(['unchanged kept']);
    expect(actions(plan([task('kept')], current, true))).toEqual(['unchanged kept', 'delete gone-a', 'delete gone-b']);
  });

  it('reports a declared task managed by someone else or by nobody instead of planning it', () => {
    const diff = plan(
      [task('ok'), task('by-hand'), task('theirs')],
      [task('by-hand', { managedBy: null }), task('theirs', { managedBy: 'other-repo' })],
      true,
    );
    expect(actions(diff)).toEqual(['create ok']);
    expect(diff.notManaged).toEqual([
      { index: 1, name: 'by-hand', managedBy: null },
      { index: 2, name: 'theirs', managedBy: 'other-repo' },
    ]);
  });

  it('compares pause and managedBy like any field', () => {
    expect(fieldChanges(task('a'), task('a', { paused: true }))).toEqual([
      { field: 'paused', before: false, after: true, secret: false },
    ]);
  });
});
