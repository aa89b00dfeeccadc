import type { OVERLAP_POLICIES } from '@punctual/contract';

/**
 * Whether the runs of a task under this overlap policy exclude one another — every policy but
 * `allow`. Its executions are planned `exclusive`, and only those are judged by the policy and
 * hold the task's turn (DESIGN §2, §5).
 */
export function isExclusive(overlap: (typeof OVERLAP_POLICIES)[number]): boolean {
  return overlap !== 'allow';
}

/**
 * Whether an execution that has spent `attempt` attempts (its handler started that many times) may
 * have another under a policy of `maxAttempts`: a failure then retries, a lease taken over runs
 * again; otherwise the execution ends `dead`.
 */
export function attemptsRemain(attempt: number, maxAttempts: number): boolean {
  return attempt < maxAttempts;
}
