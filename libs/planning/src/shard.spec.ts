import { describe, expect, it } from 'vitest';
import { leaderKey, shardShare } from './shard.js';

describe('leaderKey', () => {
  it('names the lock of a one-shard cluster as before sharding, and each shard of more by its number', () => {
    expect(leaderKey(0, 1)).toEqual(['scheduler', 'leader']);
    expect(leaderKey(0, 8)).toEqual(['scheduler', 'leader', '0']);
    expect(leaderKey(7, 8)).toEqual(['scheduler', 'leader', '7']);
  });

  it('gives every shard of a cluster its own key', () => {
    for (const shards of [1, 2, 8, 256]) {
      const keys = new Set(Array.from({ length: shards }, (_, k) => leaderKey(k, shards).join(':')));
      expect(keys.size).toBe(shards);
    }
  });
});

describe('shardShare', () => {
  it('rounds up, so every shard has a taker, and counts no scheduler as one', () => {
    expect(shardShare(8, 3)).toBe(3);
    expect(shardShare(8, 2)).toBe(4);
    expect(shardShare(8, 0)).toBe(8);
    expect(shardShare(1, 5)).toBe(1);
  });
});
