/**
 * Tasks, calendars and executions as the API changes and shows them: validated definitions,
 * create, edit, apply, pause, resume, trigger, backfill, cancel, their audit entries and the word
 * to the leader, and the presenters that turn rows into the contract's shapes.
 *
 * @imports @punctual/auth, @punctual/clock, @punctual/cluster, @punctual/config, @punctual/contract,
 *   @punctual/db, @punctual/metrics, @punctual/planning, @punctual/queue, @punctual/redis, @punctual/time
 * @packageDocumentation
 */
export {
  CalendarInUseError,
  ExecutionStateError,
  InvalidBatchError,
  InvalidCursorError,
  InvalidTaskError,
  ManagedElsewhereError,
  NotFoundError,
  PayloadTooLargeError,
  TaskNotManagedError,
  VersionConflictError,
} from './errors.js';
export { ExecutionViews } from './execution-views.service.js';
export { ExecutionsService } from './executions.service.js';
export { decodeCursor, nextCursor } from './page-cursor.js';
export { missingHandlerWarnings } from './handler-warnings.js';
export { previewSchedule, upcomingFireTimes } from './schedule-preview.js';
export { type BatchItemResult } from './task-batch.js';
export { newTaskSecret, scheduleSpecFromInput, type TaskDefinition, toTaskDefinition } from './task-definition.js';
export { type LifecycleResult, TaskLifecycle } from './task-lifecycle.js';
export { mergeTaskPatch } from './task-patch.js';
export {
  presentDefinition,
  presentEvent,
  presentExecution,
  presentHealth,
  presentTask,
  type TaskDefinitionJson,
  withBareNames,
} from './task.presenter.js';
export { TaskApplyService, type TaskApplyResult } from './task-apply.service.js';
export { diffTasks, fieldChanges, type TaskDiff, type TaskState } from './task-diff.js';
export { TaskRunsService } from './task-runs.service.js';
export { TasksCoreModule } from './tasks.module.js';
export { TasksService } from './tasks.service.js';
export { calendarFields, CalendarsService, presentCalendar } from './calendars.service.js';
export { TaskViews } from './task-views.service.js';
export { TimelineService } from './timeline/timeline.service.js';
export { TaskVersionsService } from './task-versions.service.js';
