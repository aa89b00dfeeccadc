import { describe, expect, it } from 'vitest';
import { hmacSigner } from '../handler-task.js';
import { secretScrubber } from './secret-scrubber.js';

describe('secretScrubber', () => {
  const payload = {
    url: 'https://internal.example/x',
    headers: { authorization: 'Bearer tok-123' },
    body: { nested: { pin: 987654, list: ['alpha-1'] } },
  };

  it('blanks the signing secret (through its signer) and every value under the secret fields', () => {
    const scrub = secretScrubber(
      payload,
      ['headers.authorization', 'body.nested'],
      undefined,
      hmacSigner('signing-secret').redact,
    );
    expect(scrub('a signing-secret b Bearer tok-123 c 987654 d alpha-1 e')).toBe(
      'a [redacted] b [redacted] c [redacted] d [redacted] e',
    );
  });

  it('blanks a secret field that holds the signing secret whole', () => {
    const scrub = secretScrubber(
      { token: 'Bearer signing-secret' },
      ['token'],
      undefined,
      hmacSigner('signing-secret').redact,
    );
    expect(scrub('sent Bearer signing-secret')).toBe('sent [redacted]');
  });

  it('blanks the host when the URL itself is secret, and leaves it otherwise', () => {
    const url = new URL(payload.url);
    const redact = hmacSigner('s3cret').redact;
    expect(secretScrubber(payload, ['url'], url, redact)('POST internal.example failed')).toBe(
      'POST [redacted] failed',
    );
    expect(secretScrubber(payload, [], url, redact)('POST internal.example failed')).toBe(
      'POST internal.example failed',
    );
  });

  it('ignores paths that lead nowhere and values too short to be secrets', () => {
    const scrub = secretScrubber({ a: 'x', b: null }, ['a', 'b.c', 'missing'], undefined, hmacSigner('s3cret').redact);
    expect(scrub('x marks the spot')).toBe('x marks the spot');
  });
});
