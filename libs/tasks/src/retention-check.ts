import { formatDuration, splitQualifiedName } from '@punctual/contract';
import type { HistoryRetention } from '@punctual/db';
import { InvalidTaskError } from './errors.js';

/**
 * A task's `maxDelay` must fit in its namespace's history retention: a slot that can still be
 * planned or claimed keeps its row, or its `UNIQUE (task_id, scheduled_for)` guard would be asked
 * about a slot whose row was pruned (DESIGN §3). Throws `InvalidTaskError` (`retention_too_short`,
 * a 422) naming the task; one read per namespace.
 */
export async function checkRetentionCovers(
  retention: HistoryRetention,
  definitions: readonly { name: string; maxDelayMs: number }[],
): Promise<void> {
  const kept = new Map<string, number>();
  for (const d of definitions) {
    const { namespace, name } = splitQualifiedName(d.name);
    if (!kept.has(namespace)) kept.set(namespace, await retention.historyMsOf(namespace));
    const ms = kept.get(namespace)!;
    if (d.maxDelayMs > ms)
      throw new InvalidTaskError(
        'policy.maxDelay',
        `task "${name}": maxDelay ${formatDuration(d.maxDelayMs)} is longer than namespace "${namespace}" keeps its history (${formatDuration(ms)}): a slot it may still run would lose its row`,
        'retention_too_short',
      );
  }
}
