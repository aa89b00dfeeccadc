import { z } from 'zod';

export const TASK_STATUSES = ['active', 'paused', 'completed'] as const;
export const OVERLAP_POLICIES = ['skip', 'allow', 'buffer_one', 'replace'] as const;
export const MISFIRE_POLICIES = ['run_once', 'skip', 'run_all'] as const;
export const DST_GAPS = ['shift', 'skip', 'end'] as const;
export const DST_OVERLAPS = ['first', 'last', 'both'] as const;
export const DISAMBIGUATIONS = ['earlier', 'later', 'compatible'] as const;
export const NOTIFY_EVENTS = ['succeeded', 'failed', 'dead'] as const;
export const EXECUTION_STATUSES = [
  'scheduled',
  'queued',
  'running',
  'retrying',
  'succeeded',
  'dead',
  'skipped',
  'missed',
  'cancelled',
] as const;
/** Executions not yet finished: what the queue still has to do. */
export const PENDING_EXECUTION_STATUSES = ['scheduled', 'queued', 'running', 'retrying'] as const;
/** Executions planned and not started: until their fire time comes they are slots still to come, not runs. */
export const PLANNED_EXECUTION_STATUSES = ['scheduled', 'queued'] as const;
export const SKIP_REASONS = ['overlap', 'late', 'paused', 'task_changed', 'task_deleted', 'dst'] as const;
export const TRIGGERS = ['schedule', 'catchup', 'manual', 'backfill'] as const;
export const ROLES = ['viewer', 'operator', 'admin'] as const;
export const CATCH_UPS = ['skip', 'latest', 'all'] as const;
/** A task's health (DESIGN §8), in the order the console sorts by: the worst first. */
export const HEALTH_STATES = ['late', 'failing', 'never_ran', 'paused', 'ok', 'completed'] as const;
/** What `POST /v1/tasks:apply` does (or would do) to one task. */
export const APPLY_ACTIONS = ['create', 'update', 'delete', 'unchanged'] as const;

export const TaskStatus = z.enum(TASK_STATUSES);
export const OverlapPolicy = z.enum(OVERLAP_POLICIES);
export const MisfirePolicy = z.enum(MISFIRE_POLICIES);
export const DstGap = z.enum(DST_GAPS);
export const DstOverlap = z.enum(DST_OVERLAPS);
export const Disambiguation = z.enum(DISAMBIGUATIONS);
export const NotifyEvent = z.enum(NOTIFY_EVENTS);
export const ExecutionStatus = z.enum(EXECUTION_STATUSES);
export const SkipReason = z.enum(SKIP_REASONS);
export const Trigger = z.enum(TRIGGERS);
export const Role = z.enum(ROLES);
export const CatchUp = z.enum(CATCH_UPS);
export const ApplyAction = z.enum(APPLY_ACTIONS);
export const HealthState = z.enum(HEALTH_STATES);

export type TaskStatus = z.infer<typeof TaskStatus>;
export type ExecutionStatus = z.infer<typeof ExecutionStatus>;
export type Role = z.infer<typeof Role>;
export type CatchUp = z.infer<typeof CatchUp>;
export type ApplyAction = z.infer<typeof ApplyAction>;
export type HealthState = z.infer<typeof HealthState>;
