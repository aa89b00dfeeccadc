import type { ExecutionFilter, ExecutionQueriesRepository } from '@punctual/db';
import { presentExecution } from '@punctual/tasks';
import { ApiError } from './api-error.js';
import { decodeCursor, encodeCursor } from './pagination.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One page of executions, newest first, with the keyset cursor of the next page. */
export async function executionPage(executions: ExecutionQueriesRepository, filter: ExecutionFilter, limit = 50, cursor?: string) {
  const after = cursor ? decodeCursor<{ s: string; id: string }>(cursor, 's', 'id') : undefined;
  const scheduledFor = after && new Date(after.s);
  if (after && (Number.isNaN(scheduledFor!.getTime()) || !UUID.test(after.id))) throw new ApiError(400, 'invalid_cursor', 'cursor is not one this API returned', [{ field: 'cursor', message: 'invalid cursor' }]);
  const items = await executions.list(filter, limit, after && scheduledFor && { scheduledFor, id: after.id });
  const last = items.length === limit ? items[items.length - 1] : undefined;
  return { items: items.map(presentExecution), nextCursor: last ? encodeCursor({ s: last.scheduledFor.toISOString(), id: last.id }) : null };
}
