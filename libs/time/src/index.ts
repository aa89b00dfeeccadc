/**
 * The schedule math, pure: cron, RRULE, one-off and interval schedules in any time zone, DST
 * rules, excluded days and jitter. Inputs in, instants out; nothing of Postgres, Redis or Nest.
 *
 * @imports none
 * @packageDocumentation
 */
export { compileCron } from './cron.js';
export { type CronFields, parseCron, usesHash } from './cron-expression.js';
export { type DstPolicy, ELAPSED_TIME_RULE, FIXED_TIME_RULE, resolveDstRule } from './dst-policy.js';
export * from './errors.js';
export { checkExcludedDays, excludedDatesOfYear, excludingDays } from './excluded-days.js';
export * from './jitter.js';
export { type Disambiguation, parseAt, resolveLocalTime } from './local-time.js';
export { compileRrule } from './rrule.js';
export { compileSchedule, countSlots, latestSlots, slotsBetween } from './schedule.js';
export type { ExcludedDays, Schedule, ScheduleBounds, ScheduleSpec } from './schedule-spec.js';
export { instantsOfWall, type WallMapping } from './wall-time.js';
export * from './zone.js';
export { offsetAt, wallOf } from './zone-timeline.js';
