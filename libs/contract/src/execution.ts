import { z } from 'zod';
import { Instant, Page, PageQuery, QueryFlag, Timestamp } from './common.js';
import { ExecutionStatus, PLANNED_EXECUTION_STATUSES, SkipReason, Trigger } from './enums.js';

/**
 * When an execution is *due* (a run, as opposed to a slot still to come), in the words the API's
 * documents use: `lastExecution`, `upcoming` and the execution lists are all cut by it.
 */
export const DUE_WORDS =
  'An execution is due once its fire time has come (`fireAt` ≤ now), once it has left the planned ' +
  'states `scheduled` and `queued` (it started, or was skipped, missed or cancelled), or at once when ' +
  'the schedule did not plan it ahead (a manual, backfill or catch-up run is asked for now); until then ' +
  'it is a slot planned ahead, still to come.';

/** An execution: one slot of a task, or a manual or backfill run (DESIGN §7). */
export const Execution = z
  .object({
    id: z.uuid(),
    task: z.string(),
    taskDeleted: z.boolean().meta({
      description:
        'the task that planned it has since been deleted: its history is kept under the name `task`, beside that of a task that took the name later',
    }),
    scheduledFor: Timestamp,
    fireAt: Timestamp,
    trigger: Trigger,
    status: ExecutionStatus,
    skipReason: SkipReason.nullable(),
    attempt: z.number().int(),
    workerId: z.string().nullable(),
    queuedAt: Timestamp.nullable(),
    startedAt: Timestamp.nullable(),
    finishedAt: Timestamp.nullable(),
    durationMs: z.number().int().nullable(),
    nextAttemptAt: Timestamp.nullable(),
    error: z.string().nullable(),
    result: z.unknown().meta({ description: "the handler's result (JSON), or null" }),
  })
  .meta({ id: 'Execution' });

/** One state change of an execution. */
export const ExecutionEvent = z.object({
  from: ExecutionStatus.nullable(),
  to: ExecutionStatus,
  at: Timestamp,
  workerId: z.string().nullable(),
  detail: z.unknown(),
});

export const ExecutionDetail = Execution.extend({ events: z.array(ExecutionEvent) }).meta({ id: 'ExecutionDetail' });
export const ExecutionPage = Page(Execution).meta({ id: 'ExecutionPage' });

/** `GET /v1/tasks/{name}/executions`. */
export const TaskExecutionsQuery = PageQuery.extend({
  status: ExecutionStatus.optional().meta({
    description:
      '`dead` is the dead letter; `scheduled` or `queued` lists the planned executions still to come as well (unless `planned=false`: then only the due ones)',
  }),
  planned: QueryFlag.optional().meta({
    description:
      `\`true\`: also list the executions planned and not yet due (slots still to come), in slot order with ` +
      `the rest; \`false\`: only due ones. Unset: only due ones, unless \`status\` is \`scheduled\` or ` +
      `\`queued\`. ${DUE_WORDS}`,
  }),
});
/** `GET /v1/executions`. */
export const ExecutionListQuery = TaskExecutionsQuery.extend({
  task: z.string().max(128).optional(),
  from: Instant.optional().meta({ description: 'scheduled at or after' }),
  to: Instant.optional().meta({ description: 'scheduled at or before' }),
});

/**
 * Whether a list shows the executions planned and not yet due: when `planned` says so, else only
 * for a `status` filter on a planned state (an operator asking for `scheduled` rows wants them all).
 */
export function listsPlanned(query: { status?: ExecutionStatus; planned?: boolean }): boolean {
  return (
    query.planned ??
    (query.status !== undefined && (PLANNED_EXECUTION_STATUSES as readonly string[]).includes(query.status))
  );
}

export type Execution = z.infer<typeof Execution>;
export type ExecutionEvent = z.infer<typeof ExecutionEvent>;
export type ExecutionDetail = z.infer<typeof ExecutionDetail>;
export type ExecutionListQuery = z.input<typeof ExecutionListQuery>;
export type TaskExecutionsQuery = z.input<typeof TaskExecutionsQuery>;
