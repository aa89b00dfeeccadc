import { describe, expect, it } from 'vitest';
import { UnrecoverableError } from '../task-handler.js';
import { failureOf, resultOf } from './http-outcome.js';
import type { SignedResponse } from './signed-request.js';

const answer = (status: number, body = '', extra: Partial<SignedResponse> = {}): SignedResponse => ({
  status,
  contentType: 'text/plain',
  location: null,
  body,
  truncated: false,
  ...extra,
});
const url = new URL('https://hooks.example/path?token=abc');
const keep = (text: string) => text;
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

describe('resultOf', () => {
  it('keeps a small answer whole', () => {
    expect(resultOf(answer(201, '{"ok":true}', { contentType: 'application/json' }))).toEqual({
      status: 201,
      headers: { 'content-type': 'application/json' },
      body: '{"ok":true}',
      truncated: false,
    });
  });

  it.each([
    ['plain text', 'x'.repeat(64 * 1024)],
    ['quotes, escaped in JSON', '"'.repeat(64 * 1024)],
    ['control characters, six bytes each in JSON', '\u0001'.repeat(64 * 1024)],
    ['emoji split at the cut', `a${'😀'.repeat(20_000)}`],
  ])('cuts %s so the result fits the 64 KiB result limit', (_name, body) => {
    const result = resultOf(answer(200, body));
    expect(jsonBytes(result)).toBeLessThanOrEqual(64 * 1024);
    expect(jsonBytes(result)).toBeGreaterThan(60 * 1024);
    expect(result.truncated).toBe(true);
    expect(body.startsWith(result.body)).toBe(true);
    expect(result.body).not.toMatch(/[\uD800-\uDBFF]$/);
  });

  it('replaces NUL characters, which Postgres jsonb refuses', () => {
    expect(resultOf(answer(200, 'a\u0000b')).body).toBe('a\uFFFDb');
  });
});

describe('failureOf', () => {
  it.each([408, 429, 500, 502, 503, 504])('%i is retryable', (status) => {
    const error = failureOf(answer(status, 'busy'), url, 'POST hooks.example', keep);
    expect(error).not.toBeInstanceOf(UnrecoverableError);
    expect(error.message).toBe(`POST hooks.example answered ${status}: busy`);
  });

  it.each([400, 401, 403, 404, 410, 422])('%i goes to the dead letter', (status) => {
    expect(failureOf(answer(status), url, 'POST hooks.example', keep)).toBeInstanceOf(UnrecoverableError);
  });

  it('a redirect is not followed and names only where it pointed', () => {
    const error = failureOf(
      answer(302, '', { location: 'https://other.example/new?sig=zzz' }),
      url,
      'POST hooks.example',
      keep,
    );
    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(error.message).toBe(
      'POST hooks.example answered 302, a redirect to https://other.example; redirects are not followed, call the final URL',
    );
  });

  it('quotes at most the start of the body, through the scrubber', () => {
    const error = failureOf(answer(400, `echo: hunter2 ${'y'.repeat(1000)}`), url, 'POST hooks.example', (t) =>
      t.replaceAll('hunter2', '[redacted]'),
    );
    expect(error.message).toMatch(/^POST hooks\.example answered 400: echo: \[redacted\] y+…$/);
    expect(error.message.length).toBeLessThan(300);
  });
});
