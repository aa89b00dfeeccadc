import { describe, expect, it } from 'vitest';
import { findUnstorable, storableJson, storablePrefix, storableText, unstorableReason } from './storable-text.js';

describe('storable text', () => {
  it('names NUL characters and lone surrogates, and takes whole characters', () => {
    expect(unstorableReason('a\u0000b')).toMatch(/NUL/);
    expect(unstorableReason('a\ud800b')).toMatch(/surrogate/);
    expect(unstorableReason('b\udc00')).toMatch(/surrogate/);
    expect(unstorableReason('emoji 😀, accents é, CJK 漢')).toBeNull();
  });

  it('finds the first unstorable string of a JSON value by its path, keys included', () => {
    expect(findUnstorable({ payload: { list: ['ok', 'x\u0000'] } })).toEqual({
      path: ['payload', 'list', 1],
      reason: expect.stringMatching(/NUL/),
    });
    expect(findUnstorable({ labels: { ['k\ud800']: 'v' } })).toEqual({
      path: ['labels', 'k\ud800'],
      reason: expect.stringMatching(/^has a key that .*surrogate/),
    });
    expect(findUnstorable({ a: [1, true, null, { b: '😀' }] })).toBeNull();
  });

  it('makes text storable: each NUL and lone surrogate becomes U+FFFD, whole characters stay', () => {
    expect(storableText('a\u0000b\ud800c😀')).toBe('a\uFFFDb\uFFFDc😀');
    const json = { 'k\u0000': ['\udc00', { n: 1 }], ok: 'fine' };
    expect(storableJson(json)).toEqual({ 'k\uFFFD': ['\uFFFD', { n: 1 }], ok: 'fine' });
    const clean = { a: 'b' };
    expect(storableJson(clean)).toBe(clean);
    expect(JSON.stringify(storableJson({ s: 'x\ud83d' }))).toBe('{"s":"x\uFFFD"}');
  });

  it('cuts a prefix without halving a character', () => {
    // '😀' is two UTF-16 units: a cut between them drops the half.
    expect(storablePrefix('ab😀', 3)).toBe('ab');
    expect(storablePrefix('ab😀', 4)).toBe('ab😀');
    expect(storablePrefix('a\u0000', 10)).toBe('a\uFFFD');
  });
});
