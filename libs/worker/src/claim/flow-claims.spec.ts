import type { Task } from '@punctual/db';
import { quotaFlowKey } from '@punctual/planning';
import { describe, expect, it } from 'vitest';
import { concurrencyKeyOf, flowPolicyOf } from './flow-claims.js';

const task = (namespace: string, concurrencyKey: string | null, rateKey: string | null) =>
  ({
    namespace,
    concurrencyKey,
    concurrencyLimit: concurrencyKey && 2,
    rateKey,
    rateLimit: rateKey && 10,
    ratePerMs: rateKey && 60_000,
  }) as unknown as Task;

describe('flow-control keys in namespaces', () => {
  it('are the namespace’s own: the same key in two namespaces is two keys, in default as written', () => {
    expect(flowPolicyOf(task('team-a', 'openai', 'openai'))).toEqual({
      concurrency: { key: 'team-a/openai', limit: 2 },
      rate: { key: 'team-a/openai', limit: 10, perMs: 60_000 },
      quota: null,
    });
    expect(flowPolicyOf(task('team-b', 'openai', null))?.concurrency?.key).toBe('team-b/openai');
    expect(flowPolicyOf(task('default', 'openai', null))?.concurrency?.key).toBe('openai');
    // A key names its own namespace's capacity only: one stored with a "/" (the API refuses it now)
    // is scoped whole, never another namespace's key, and no key is a namespace's quota wake key.
    expect(concurrencyKeyOf(task('default', 'team-a/openai', null))).toBe('default/team-a/openai');
    expect(concurrencyKeyOf(task('team-b', 'team-a/openai', null))).toBe('team-b/team-a/openai');
    for (const key of ['namespace-quota:team-a', '#quota', 'quota', '#quota:team-a'])
      for (const ns of ['default', 'team-b'])
        expect(concurrencyKeyOf(task(ns, key, null))).not.toBe(quotaFlowKey('team-a'));
    expect(concurrencyKeyOf(task('default', '#quota/team-a', null))).not.toBe(quotaFlowKey('team-a'));
    expect(flowPolicyOf(task('team-a', null, null))).toBeNull();
  });

  it("add the namespace's run quotas, as the claim read them: a task with no key of its own goes through flow control too", () => {
    const quota = { namespace: 'team-a', concurrency: 5, perMinute: null };
    expect(flowPolicyOf(task('team-a', null, null), quota)).toEqual({ concurrency: null, rate: null, quota });
    expect(flowPolicyOf(task('team-a', 'openai', null), quota)).toMatchObject({
      concurrency: { key: 'team-a/openai', limit: 2 },
      quota,
    });
  });
});
