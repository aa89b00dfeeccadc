import { describe, expect, it } from 'vitest';
import { redactPayload } from './redact.js';

describe('redactPayload', () => {
  it('masks top-level and nested fields and leaves the original alone', () => {
    const payload = { token: 't0p', headers: { authorization: 'Bearer s3cret', accept: 'json' }, keep: 1 };
    expect(redactPayload(payload, ['token', 'headers.authorization', 'missing.path'])).toEqual({
      token: '[redacted]',
      headers: { authorization: '[redacted]', accept: 'json' },
      keep: 1,
    });
    expect(payload.token).toBe('t0p');
  });
});
