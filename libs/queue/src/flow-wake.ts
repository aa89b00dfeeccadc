import type { RedisService } from '@punctual/redis';
import { FLOW_WAKE_CHANNEL } from './queue.constants.js';

/**
 * Tells every worker that flow-control key `key` moved (see FLOW_WAKE_CHANNEL): each brings its
 * first run held on the key forward. Answers the error when Redis did not take the word (the held
 * runs then ask again on their own), else null.
 */
export function announceFlowKey(redis: RedisService, key: string): Promise<unknown> {
  return redis.client.publish(redis.key(FLOW_WAKE_CHANNEL), key).then(
    () => null,
    (error: unknown) => error ?? new Error('publish failed'),
  );
}
