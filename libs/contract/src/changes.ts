import { z } from 'zod';
import { FireTime, QueryFlag, Timestamp } from './common.js';

/** The most fire times a preview compares. */
export const HORIZON_MAX = 1_000;
export const HORIZON_DEFAULT = 20;

/** `?dryRun=true&horizon=20`: what a change would do, stored nowhere. */
export const ChangeQuery = z.strictObject({
  dryRun: QueryFlag.optional().meta({
    description: '`true`: change nothing and answer what the change would do (`changes`)',
  }),
  horizon: z.coerce
    .number()
    .int()
    .min(1)
    .max(HORIZON_MAX)
    .optional()
    .meta({
      description: `how many of the next fire times a dry run compares (default ${HORIZON_DEFAULT}, at most ${HORIZON_MAX})`,
    }),
  reason: z
    .string()
    .max(500)
    .optional()
    .meta({ description: 'why the change is made: kept with the version it makes (`GET /v1/tasks/{name}/versions`)' }),
});

/** A planned execution a change keeps, withdraws or re-times. */
export const PendingSlot = z.object({
  executionId: z.uuid(),
  scheduledFor: Timestamp,
  fireAt: Timestamp,
  due: z.boolean(),
  newFireAt: Timestamp.optional(),
});

/**
 * What a change of a task does to its runs (DESIGN §7 "Previews"), over the next `horizon` fire
 * times: before and after, the slots added and removed (a slot that only moves within its local
 * day is `moved`), what becomes of its planned executions, the runs in progress that finish under
 * the definition they started with, and warnings in words.
 */
export const TaskChanges = z
  .object({
    fireTimes: z.object({ before: z.array(FireTime), after: z.array(FireTime) }),
    added: z.array(FireTime),
    removed: z.array(FireTime),
    moved: z.array(z.object({ from: FireTime, to: FireTime })),
    pending: z.object({ kept: z.array(PendingSlot), withdrawn: z.array(PendingSlot), retimed: z.array(PendingSlot) }),
    running: z.array(z.object({ executionId: z.uuid(), scheduledFor: Timestamp, status: z.string() })),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'TaskChanges' });

export type ChangeQuery = z.input<typeof ChangeQuery>;
export type PendingSlot = z.infer<typeof PendingSlot>;
export type TaskChanges = z.infer<typeof TaskChanges>;

/** `GET /v1/tasks/{name}/versions/{version}?against=`: the version to compare with (default: the one before). */
export const TaskVersionQuery = z.strictObject({
  against: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .meta({ description: 'the version to compare with; default the version before it' }),
});

/** `POST /v1/tasks/{name}/rollback`: make a new version equal to an old one (a deleted task: restore it). */
export const RollbackBody = z
  .strictObject({
    version: z
      .number()
      .int()
      .min(1)
      .meta({ description: 'the version to go back to, as `GET /v1/tasks/{name}/versions` lists it' }),
    dryRun: z
      .boolean()
      .optional()
      .meta({ description: '`true`: change nothing and answer what the rollback would do (`changes`)' }),
    reason: z.string().max(500).optional().meta({ description: 'why, kept with the version it makes' }),
  })
  .meta({ id: 'RollbackBody' });

export type TaskVersionQuery = z.input<typeof TaskVersionQuery>;
export type RollbackBody = z.infer<typeof RollbackBody>;
