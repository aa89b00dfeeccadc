import { z } from 'zod';
import { TaskChanges } from './changes.js';
import { FieldChange } from './common.js';
import { ApplyAction } from './enums.js';
import { APPLY_MANAGED_BY_DEFAULT, BATCH_MAX, CALENDARS_APPLY_MAX } from './limits.js';
import { CalendarSpec } from './calendar.js';
import { ManagedBy, TaskSpec, Warnings } from './task.js';

/**
 * `POST /v1/tasks:apply`: make the tasks managed by `managedBy` what `tasks` declares (DESIGN §12),
 * in one transaction. A task of `tasks` that exists must be managed by `managedBy`: tasks managed
 * by nobody or by someone else are never touched.
 */
export const TaskApplyRequest = z
  .strictObject({
    managedBy: ManagedBy.optional().meta({
      description: 'who manages the declared tasks; each task gets it as its managedBy',
      default: APPLY_MANAGED_BY_DEFAULT,
    }),
    tasks: z
      .array(TaskSpec)
      .max(BATCH_MAX)
      .meta({ description: "every task managedBy manages; a task's managedBy, if given, must be managedBy" }),
    calendars: z.array(CalendarSpec).max(CALENDARS_APPLY_MAX).optional().meta({
      description:
        'every calendar managedBy manages, written before the tasks that exclude them; absent: calendars are left as they are (and never pruned)',
    }),
    prune: z
      .boolean()
      .optional()
      .meta({ description: 'also delete the tasks managedBy manages that `tasks` does not declare', default: false }),
    dryRun: z.boolean().optional().meta({ description: 'answer what would change and change nothing', default: false }),
  })
  .meta({ id: 'TaskApplyRequest' });

export const TaskApplyItem = z.object({
  name: z.string(),
  action: ApplyAction,
  changes: z.array(FieldChange).meta({ description: 'for an update: the fields that differ' }),
  version: z
    .number()
    .int()
    .nullable()
    .meta({ description: "the task's version after the apply (null once deleted, or not yet created)" }),
  secret: z
    .string()
    .optional()
    .meta({ description: 'only for a task created now (not in a dry run): its HMAC secret, shown this once' }),
  effects: TaskChanges.optional().meta({
    description:
      'only in a dry run, for a task created or updated: what the change does to its next fire times and planned runs',
  }),
});

export const CalendarApplyItem = z.object({
  name: z.string(),
  action: ApplyAction,
  changes: z.array(FieldChange).meta({ description: 'for an update: the fields that differ' }),
  version: z
    .number()
    .int()
    .nullable()
    .meta({ description: "the calendar's version after the apply (null once deleted, or not yet created)" }),
});

/** What an apply did (or, with dryRun, would do): one item per task declared or deleted. */
export const TaskApplyResponse = z
  .object({
    managedBy: z.string(),
    dryRun: z.boolean(),
    changed: z.number().int().meta({ description: 'created + updated + deleted' }),
    created: z.number().int(),
    updated: z.number().int(),
    deleted: z.number().int(),
    unchanged: z.number().int(),
    items: z
      .array(TaskApplyItem)
      .meta({ description: 'the declared tasks in their order, then the deleted ones by name' }),
    calendars: z.array(CalendarApplyItem).meta({
      description:
        'the declared calendars in their order, then the deleted ones (none when the request has no calendars)',
    }),
    warnings: Warnings,
  })
  .meta({ id: 'TaskApplyResponse' });

export type TaskApplyRequest = z.infer<typeof TaskApplyRequest>;
export type TaskApplyItem = z.infer<typeof TaskApplyItem>;
export type CalendarApplyItem = z.infer<typeof CalendarApplyItem>;
export type TaskApplyResponse = z.infer<typeof TaskApplyResponse>;
