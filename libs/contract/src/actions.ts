import { z } from 'zod';
import { FireTime, Instant } from './common.js';
import { CatchUp } from './enums.js';
import { BACKFILL_DEFAULT, BACKFILL_MAX, PREVIEW_DEFAULT, PREVIEW_MAX } from './limits.js';
import { ScheduleSpec } from './task.js';

/** `POST /v1/tasks/{name}/pause`. */
export const PauseBody = z
  .strictObject({
    cancel: z.boolean().optional().meta({
      description: 'also cancel the executions in progress (by default they finish their slot)',
      default: false,
    }),
    note: z
      .string()
      .max(500)
      .optional()
      .meta({
        description: "why: shown as the task's pauseNote (and in its health and timeline) until it resumes",
        examples: ['waiting for the vendor fix'],
      }),
  })
  .meta({ id: 'PauseBody' });

/** `POST /v1/tasks/{name}/resume`. */
export const ResumeBody = z
  .strictObject({
    catchUp: CatchUp.optional().meta({
      description: "the slots of the pause: skip them, run the latest, or run all (default: the task's misfire policy)",
      examples: ['latest'],
    }),
  })
  .meta({ id: 'ResumeBody' });

/** `POST /v1/tasks/{name}/trigger`. */
export const TriggerBody = z
  .strictObject({
    payload: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({ description: 'replaces the task payload for this run', examples: [{ reason: 'manual re-run' }] }),
  })
  .meta({ id: 'TriggerBody' });

/** `POST /v1/tasks/{name}/backfill`. */
export const BackfillBody = z
  .strictObject({
    from: Instant.meta({ examples: ['2026-06-01T00:00:00Z'] }),
    to: Instant.meta({ examples: ['2026-06-07T00:00:00Z'] }),
    maxRuns: z.number().int().min(1).max(BACKFILL_MAX).optional().meta({ default: BACKFILL_DEFAULT }),
  })
  .meta({ id: 'BackfillBody' });
export const BackfillResponse = z
  .object({
    planned: z.number().int().meta({
      description: 'slots planned now, missed or skipped ones included (ones already planned or run are not counted)',
    }),
  })
  .meta({ id: 'BackfillResponse' });

/** `POST /v1/schedules/preview`. */
export const PreviewRequest = z
  .strictObject({
    schedule: ScheduleSpec,
    from: Instant.optional().meta({ description: 'default: now', examples: ['2026-03-28T00:00:00Z'] }),
    count: z
      .number()
      .int()
      .min(1)
      .max(PREVIEW_MAX)
      .optional()
      .meta({ default: PREVIEW_DEFAULT, examples: [5] }),
  })
  .meta({ id: 'PreviewRequest' });
export const PreviewResponse = z.object({ fireTimes: z.array(FireTime) }).meta({ id: 'PreviewResponse' });

export type PauseBody = z.infer<typeof PauseBody>;
export type ResumeBody = z.infer<typeof ResumeBody>;
export type TriggerBody = z.infer<typeof TriggerBody>;
export type BackfillBody = z.infer<typeof BackfillBody>;
export type PreviewRequest = z.infer<typeof PreviewRequest>;
export type PreviewResponse = z.infer<typeof PreviewResponse>;
