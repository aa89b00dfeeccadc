import { z } from 'zod';
import { Instant, Page, PageQuery, Timestamp } from './common.js';
import { ExecutionStatus, SkipReason, Trigger } from './enums.js';

/** An execution: one slot of a task, or a manual or backfill run (DESIGN §7). */
export const Execution = z
  .object({
    id: z.uuid(),
    task: z.string(),
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
export const TaskExecutionsQuery = PageQuery.extend({ status: ExecutionStatus.optional().meta({ description: '`dead` is the dead letter' }) });
/** `GET /v1/executions`. */
export const ExecutionListQuery = TaskExecutionsQuery.extend({
  task: z.string().max(128).optional(),
  from: Instant.optional().meta({ description: 'scheduled at or after' }),
  to: Instant.optional().meta({ description: 'scheduled at or before' }),
});

export type Execution = z.infer<typeof Execution>;
export type ExecutionEvent = z.infer<typeof ExecutionEvent>;
export type ExecutionDetail = z.infer<typeof ExecutionDetail>;
export type ExecutionListQuery = z.input<typeof ExecutionListQuery>;
export type TaskExecutionsQuery = z.input<typeof TaskExecutionsQuery>;
