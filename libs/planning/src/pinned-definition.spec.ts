import { describe, expect, it } from 'vitest';
import { pinnedDefinitionOf, withPinnedDefinition } from './pinned-definition.js';

describe('the pinned definition', () => {
  const task = {
    name: 'x',
    handler: 'http',
    payload: { v: 1 },
    secretFields: ['token'],
    timeoutMs: 1,
    maxAttempts: 2,
    backoffMs: 3,
    backoffMaxMs: 4,
    overlap: 'skip',
  };

  it('keeps what runs a slot and how it retries, nothing else', () => {
    expect(pinnedDefinitionOf(task)).toEqual({
      handler: 'http',
      payload: { v: 1 },
      secretFields: ['token'],
      timeoutMs: 1,
      maxAttempts: 2,
      backoffMs: 3,
      backoffMaxMs: 4,
    });
  });

  it('runs an edited task as the execution started it: the pinned fields over the current ones', () => {
    const edited = { ...task, handler: 'noop', payload: { v: 2 }, maxAttempts: 9, overlap: 'allow' };
    expect(withPinnedDefinition(edited, pinnedDefinitionOf(task))).toEqual({ ...task, overlap: 'allow' });
    expect(withPinnedDefinition(edited, { handler: 'log', payload: null })).toEqual({ ...edited, handler: 'log' });
    for (const none of [null, undefined, 'x', []]) expect(withPinnedDefinition(edited, none)).toBe(edited);
  });
});
