import { presentExecution } from '@punctual/core';
import type { ExecutionFilter, ExecutionsRepository } from '@punctual/db';
import { decodeCursor, encodeCursor } from './pagination.js';

/** One page of executions, newest first, with the keyset cursor of the next page. */
export async function executionPage(executions: ExecutionsRepository, filter: ExecutionFilter, limit = 50, cursor?: string) {
  const after = cursor ? decodeCursor<{ s: string; id: string }>(cursor) : undefined;
  const items = await executions.list(filter, limit, after && { scheduledFor: new Date(after.s), id: after.id });
  const last = items.length === limit ? items[items.length - 1] : undefined;
  return { items: items.map(presentExecution), nextCursor: last ? encodeCursor({ s: last.scheduledFor.toISOString(), id: last.id }) : null };
}
