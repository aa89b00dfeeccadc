/**
 * The scheduling decisions as pure functions over plain values: which slots of a task to plan
 * (`planTaskSlots`), what a late slot becomes (`resolveLateSlots`), whether a claim may start
 * (`judgeClaim`), re-planning after an edit, lateness and shards. No Nest, Postgres or Redis.
 *
 * @imports @punctual/contract, @punctual/time
 * @packageDocumentation
 */
export { FairRelease, isBacklog, OnTimeFirst, type Releasable } from './fair-release.js';
export { type LateDecision, type LateSlot, resolveLateSlots } from './late-slots.js';
export { PINNED_FIELDS, type PinnedDefinition, pinnedDefinitionOf, withPinnedDefinition } from './pinned-definition.js';
export { type CursorAdvance, type PlannedExecution, type Trigger } from './planned-execution.js';
export { type KeptSlot, type ReplanDecision, replanUnstarted, type UnstartedSlot } from './replan.js';
export { phasedLookaheadMs, phaseOf } from './planning-phase.js';
export { type PlannableTask, planTaskSlots, type SlotPlannerOptions, type TaskSlotPlan } from './slot-planner.js';
export {
  type CalendarSnapshot,
  excludedDaysOf,
  type ScheduledTask,
  scheduleSpecOf,
  successDeadline,
  taskSchedule,
} from './task-schedule.js';
export {
  type ClaimContext,
  type ClaimSlot,
  type ClaimTask,
  type ClaimVerdict,
  type RunInProgress,
  judgeClaim,
} from './claim-judgement.js';
export { canBeLate, isLate } from './lateness.js';
export {
  AHEAD_COUNTED,
  type BatchPlan,
  type FlowCheck,
  type FlowPolicy,
  type FlowWrite,
  flowOrder,
  type HeldOutcome,
  heldOnQuota,
  heldOnQuotaOutcome,
  heldOutcome,
  heldOutcomes,
  inOrder,
  planBatch,
  QUOTA_PER_MS,
  quotaFlowKey,
  QUOTA_KEY_PREFIX,
  rateWindowMs,
  type RunQuota,
} from './flow-plan.js';
export {
  attemptsRemain,
  earlierSlotDue,
  isExclusive,
  isPlanned,
  type TaskSlotRow,
  taskIsFree,
  runsAhead,
} from './policy.js';
export { leaderKey, shardOf, shardShare } from './shard.js';
export {
  type EffectiveRetention,
  type NamespaceRetention,
  PARTITION_WIDTHS_MS,
  type PartitionDecision,
  type PartitionRange,
  partitionFor,
  PRUNE_BATCH,
  RETENTION_MIN_MS,
  RetentionRules,
  type RetentionSettings,
  type TableCutoffs,
} from './retention.js';
