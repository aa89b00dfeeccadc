import { describe, expect, it } from 'vitest';
import { UnrecoverableError } from '../task-handler.js';
import { parseHttpPayload } from './http-payload.js';

describe('parseHttpPayload', () => {
  it('applies the defaults and upper-cases the method', () => {
    expect(parseHttpPayload({ url: 'https://example.com/hook' })).toEqual({
      url: 'https://example.com/hook',
      method: 'POST',
    });
    expect(
      parseHttpPayload({
        url: 'http://example.com/',
        method: 'put',
        headers: { 'X-A': '1' },
        body: { a: 1 },
        timeoutMs: 500,
      }),
    ).toEqual({
      url: 'http://example.com/',
      method: 'PUT',
      headers: { 'X-A': '1' },
      body: { a: 1 },
      timeoutMs: 500,
    });
  });

  it.each([
    [null, /expected object/],
    ['http://example.com', /expected object/],
    [{}, /url: .*expected string/],
    [{ url: 'not a url' }, /url: must be an absolute http: or https: URL/],
    [{ url: 'ftp://example.com/' }, /url: must be an absolute http: or https: URL/],
    [{ url: '/relative' }, /url: must be/],
    [{ url: 'http://example.com', method: 'TRACE' }, /method: must be one of GET, HEAD, POST/],
    [{ url: 'http://example.com', method: 3 }, /method: /],
    [{ url: 'http://example.com', headers: null }, /headers: /],
    [{ url: 'http://example.com', headers: ['a'] }, /headers: /],
    [{ url: 'http://example.com', headers: { a: 1 } }, /headers.a: /],
    [
      { url: 'http://example.com', headers: { 'Idempotency-Key': 'x' } },
      /headers.Idempotency-Key: is set by punctual itself/,
    ],
    [{ url: 'http://example.com', headers: { host: 'internal' } }, /headers.host: is set by punctual itself/],
    [{ url: 'http://example.com', headers: { 'bad name': 'x' } }, /is not a valid header name/],
    [
      { url: 'http://example.com', headers: { 'x-a': 'line\r\nx-injected: 1' } },
      /holds characters a header value cannot/,
    ],
    [{ url: 'http://example.com', timeoutMs: 0 }, /timeoutMs: /],
    [{ url: 'http://example.com', timeoutMs: 1.5 }, /timeoutMs: /],
    [{ url: 'http://example.com', method: 'GET', body: 'x' }, /body: a GET or HEAD request has no body/],
    [{ url: 'http://example.com', timeout: 5 }, /Unrecognized key/],
  ])('refuses %j as unrecoverable', (payload, message) => {
    const run = () => parseHttpPayload(payload);
    expect(run).toThrow(UnrecoverableError);
    expect(run).toThrow(message);
  });

  it('never quotes a header value in its message: it may be a secret', () => {
    expect(() =>
      parseHttpPayload({ url: 'http://example.com', headers: { authorization: 'Bearer s3cr3t\n' } }),
    ).toThrow(expect.objectContaining({ message: expect.not.stringContaining('s3cr3t') }));
  });
});
