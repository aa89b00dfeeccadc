import { ErrorEnvelope, JSON_MAX_DEPTH } from '@punctual/contract';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('error messages of the API', () => {
  const ctx = useApiSandbox();
  const daily = { name: 'errors-daily', handler: 'noop', schedule: { cron: '0 9 * * *' } };

  it('says "<field> is required" of a missing field, at any depth, with 400', async () => {
    const noHandler = await ctx.api.call('POST', '/v1/tasks', {
      name: 'errors-no-handler',
      schedule: { cron: '0 9 * * *' },
    });
    expect(noHandler.status).toBe(400);
    expect(noHandler.body.error).toEqual({
      code: 'invalid_request',
      message: 'handler is required',
      details: [{ field: 'handler', message: 'handler is required' }],
    });

    const noWindow = await ctx.api.call('POST', '/v1/tasks', {
      ...daily,
      policy: { rateLimit: { key: 'k', limit: 5 } },
    });
    expect(noWindow.status).toBe(400);
    expect(noWindow.body.error.details).toEqual([
      { field: 'policy.rateLimit.per', message: 'policy.rateLimit.per is required' },
    ]);

    const inBatch = await ctx.api.call('POST', '/v1/tasks:batch', {
      tasks: [daily, { name: 'errors-no-schedule', handler: 'noop' }],
    });
    expect(inBatch.status).toBe(400);
    expect(inBatch.body.error.details).toEqual([
      { field: 'tasks[1].schedule', message: 'tasks[1].schedule is required' },
    ]);

    // A field that is there with a wrong type is not "required": it says what it must be.
    const wrongType = await ctx.api.call('POST', '/v1/tasks', { ...daily, handler: 42 });
    expect(wrongType.body.error.details).toEqual([{ field: 'handler', message: 'handler must be a string' }]);
    expect(await ctx.db.prisma.task.count()).toBe(0);
  });

  it('refuses a query parameter a route does not read (400 naming it) and changes nothing, on every route', async () => {
    expect((await ctx.api.call('POST', '/v1/tasks', { ...daily, name: 'errors-query' })).status).toBe(201);
    const patched = await ctx.api.call('PATCH', '/v1/tasks/errors-query?force=true', { description: 'changed' });
    expect(patched.status).toBe(400);
    expect(patched.body.error).toMatchObject({ code: 'invalid_request', details: [{ field: 'force' }] });
    expect((await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'errors-query' } })).description).toBeNull();
    expect((await ctx.api.call('DELETE', '/v1/tasks/errors-query?cascade=1')).status).toBe(400);
    expect((await ctx.api.call('POST', '/v1/tasks/errors-query/pause?note=x')).status).toBe(400);
    expect(await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'errors-query' } })).toMatchObject({
      status: 'active',
    });
    // Routes that read a query refuse what they do not read through their schema.
    expect((await ctx.api.call('GET', '/v1/tasks?sort=name')).status).toBe(400);
    expect((await ctx.api.call('GET', '/v1/tasks/errors-query/timeline?span=day')).status).toBe(400);
    await ctx.api.call('DELETE', '/v1/tasks/errors-query');
  });

  it('suggests the nearest known field for an unknown one (400), and none when nothing is near', async () => {
    const typo = await ctx.api.call('POST', '/v1/tasks', {
      ...daily,
      schedule: { cron: '0 9 * * *', timezon: 'Europe/Berlin' },
    });
    expect(typo.status).toBe(400);
    expect(typo.body.error).toMatchObject({
      code: 'invalid_request',
      details: [
        { field: 'schedule.timezon', message: 'schedule.timezon is not a known field, did you mean "timezone"?' },
      ],
    });

    const swapped = await ctx.api.call('PUT', '/v1/calendars/errors-cal', { dates: [], rrlues: [] });
    expect(swapped.body.error.details).toEqual([
      { field: 'rrlues', message: 'rrlues is not a known field, did you mean "rrules"?' },
    ]);

    // `handlr` is the missing handler: one detail says both.
    const { handler: _handler, ...withoutHandler } = daily;
    const misspelt = await ctx.api.call('POST', '/v1/tasks', { ...withoutHandler, handlr: 'noop' });
    expect(misspelt.body.error.details).toEqual([
      { field: 'handlr', message: 'handlr is not a known field, did you mean "handler"?' },
    ]);

    const far = await ctx.api.call('POST', '/v1/tasks', { ...daily, colour: 'red' });
    expect(far.status).toBe(400);
    expect(far.body.error.details).toEqual([{ field: 'colour', message: 'colour is not a known field' }]);

    const nested = await ctx.api.call('POST', '/v1/tasks:apply', {
      managedBy: 'errors',
      tasks: [{ ...daily, policy: { retry: { atempts: 3 } } }],
      dryRun: true,
    });
    expect(nested.body.error.details).toEqual([
      {
        field: 'tasks[0].policy.retry.atempts',
        message: 'tasks[0].policy.retry.atempts is not a known field, did you mean "attempts"?',
      },
    ]);
  });

  it("answers the refusals Express and Nest make on their own with the contract's codes too", async () => {
    const raw = async (path: string, headers: Record<string, string>, body?: string) => {
      const res = await fetch(`${ctx.api.base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.api.config.adminApiKey}`, ...headers },
        body,
      });
      return { status: res.status, body: ErrorEnvelope.parse(await res.json()).error };
    };
    const json = { 'content-type': 'application/json' };
    expect(await raw('/v1/tasks', { 'content-type': 'application/json; charset=latin1' }, '{}')).toMatchObject({
      status: 415,
      body: { code: 'unsupported_media_type', message: 'unsupported charset "LATIN1"' },
    });
    expect(await raw('/v1/tasks', { ...json, 'content-encoding': 'zip' }, '{}')).toMatchObject({
      status: 415,
      body: { code: 'unsupported_media_type', message: 'unsupported content encoding "zip"' },
    });
    expect(await raw('/v1/nowhere', json, '{}')).toMatchObject({
      status: 404,
      body: { code: 'not_found', message: 'no such route' },
    });
    const deep = `${'['.repeat(JSON_MAX_DEPTH + 1)}${']'.repeat(JSON_MAX_DEPTH + 1)}`;
    expect(await raw('/v1/tasks', json, `{"payload": ${deep}}`)).toMatchObject({
      status: 400,
      body: { code: 'too_deep' },
    });
  });

  it('says where a malformed JSON body goes wrong: line and column', async () => {
    const cases: [string, string][] = [
      ['{\n  "name": "x",\n  "handler": "noop"\n  "schedule": {}\n}', 'line 4, column 3'],
      ['{"name": "x",}', 'line 1, column 14'],
      ['{"name": tru}', 'line 1, column 13'],
      ['{\n  "name": ', 'line 2, column 11'],
      ['"just a string"', 'line 1, column 1'],
    ];
    for (const [body, where] of cases) {
      const res = await ctx.api.call('POST', '/v1/tasks', body);
      expect(res.status, body).toBe(400);
      expect(res.body.error.code, body).toBe('malformed_json');
      expect(res.body.error.message, body).toMatch(new RegExp(`^the request body is not valid JSON at ${where}: \\S`));
    }
    expect((await ctx.api.call('POST', '/v1/tasks', '{\n  "name": ')).body.error.message).toBe(
      'the request body is not valid JSON at line 2, column 11: the body ends before its JSON does',
    );
    expect((await ctx.api.call('POST', '/v1/tasks', '{"name": "x",}')).body.error.message).toBe(
      'the request body is not valid JSON at line 1, column 14: expected double-quoted property name',
    );
    // The larger limit of batch and apply bodies goes through the same parser, and the same words.
    expect((await ctx.api.call('POST', '/v1/tasks:apply', '{"tasks": [}')).body.error.message).toMatch(
      /^the request body is not valid JSON at line 1, column 12: /,
    );
  });
});
