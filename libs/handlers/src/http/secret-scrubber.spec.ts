import { describe, expect, it } from 'vitest';
import { secretScrubber } from './secret-scrubber.js';

describe('secretScrubber', () => {
  const payload = { url: 'https://internal.example/x', headers: { authorization: 'Bearer tok-123' }, body: { nested: { pin: 987654, list: ['alpha-1'] } } };

  it('blanks the signing secret and every value under the secret fields', () => {
    const scrub = secretScrubber('signing-secret', payload, ['headers.authorization', 'body.nested']);
    expect(scrub('a signing-secret b Bearer tok-123 c 987654 d alpha-1 e')).toBe('a [redacted] b [redacted] c [redacted] d [redacted] e');
  });

  it('blanks the host when the URL itself is secret, and leaves it otherwise', () => {
    const url = new URL(payload.url);
    expect(secretScrubber('s3cret', payload, ['url'], url)('POST internal.example failed')).toBe('POST [redacted] failed');
    expect(secretScrubber('s3cret', payload, [], url)('POST internal.example failed')).toBe('POST internal.example failed');
  });

  it('ignores paths that lead nowhere and values too short to be secrets', () => {
    const scrub = secretScrubber('s3cret', { a: 'x', b: null }, ['a', 'b.c', 'missing']);
    expect(scrub('x marks the spot')).toBe('x marks the spot');
  });
});
