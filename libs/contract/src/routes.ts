import type { z } from 'zod';
import { PageQuery } from './common.js';
import {
  BackfillBody,
  BackfillResponse,
  PauseBody,
  PreviewRequest,
  PreviewResponse,
  ResumeBody,
  TriggerBody,
} from './actions.js';
import { TaskApplyRequest, TaskApplyResponse } from './apply.js';
import {
  Calendar,
  CalendarDays,
  CalendarDaysQuery,
  CalendarList,
  CalendarPutBody,
  WrittenCalendar,
} from './calendar.js';
import { ChangeQuery, RollbackBody, TaskVersionQuery } from './changes.js';
import {
  ApiKeyList,
  AuditPage,
  AuditQuery,
  Cluster,
  CreateApiKeyBody,
  CreatedApiKey,
  HandlerList,
  Me,
} from './admin.js';
import type { Role } from './enums.js';
import { ExecutionDetail, ExecutionListQuery, ExecutionPage, Execution, TaskExecutionsQuery } from './execution.js';
import { TimelinePage, TimelineQuery } from './timeline.js';
import { Namespace, NamespaceListQuery, NamespacePage, NamespacePutBody } from './namespace.js';
import {
  CreatedTask,
  PatchedTask,
  TaskVersionDetail,
  TaskVersionPage,
  TaskBatchRequest,
  TaskBatchResponse,
  TaskDetail,
  TaskDetailQuery,
  TaskListQuery,
  TaskPage,
  TaskPatch,
  TaskPutBody,
  TaskSpec,
  Task,
  WrittenTask,
} from './task.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One operation of the HTTP API: everything the server, its OpenAPI document and the client need. */
export interface RouteDef {
  method: HttpMethod;
  /** The full path, parameters in braces: `/v1/tasks/{name}`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  /** The least role that may call it (viewer < operator < admin). */
  role: Role;
  body?: z.ZodType;
  query?: z.ZodType;
  /** Success status and what it answers (no schema: an empty body). */
  status: number;
  response?: z.ZodType;
  /** Other success statuses with the same response (`PUT` answers 201 or 200). */
  alsoStatus?: number[];
  /** Error statuses beyond those every route may answer (400, 401, 403, 404, 422, 429). */
  errors?: number[];
  /**
   * A route of the whole cluster takes no `?namespace=`: `shared` ones (handlers, the cluster's
   * figures, the caller, the namespaces it may see) answer any key; `whole` ones only a key of the
   * whole cluster. Every other route acts in the namespace `?namespace=` names (default `default`),
   * which a scoped key must be allowed: outside its namespaces everything is a 404.
   */
  cluster?: 'shared' | 'whole';
  /** Request headers the route reads. */
  headers?: { name: string; description: string }[];
}

const route = <const R extends RouteDef>(r: R): R => r;

/**
 * The header (value `1`) the web console sends with each call it makes on a browser session, the
 * session cookie standing in for a bearer key. A page of another origin cannot send a custom
 * header without a CORS preflight the API never grants, so a cookie alone authenticates nothing.
 */
export const CONSOLE_HEADER = 'x-punctual-console';

/** Every route of the HTTP API (DESIGN §7), by operation id. */
export const routes = {
  listTasks: route({
    method: 'GET',
    path: '/v1/tasks',
    tag: 'tasks',
    role: 'viewer',
    summary: 'List tasks',
    description: 'Keyset-paginated by name: pass nextCursor back as cursor.',
    query: TaskListQuery,
    status: 200,
    response: TaskPage,
  }),
  createTask: route({
    method: 'POST',
    path: '/v1/tasks',
    tag: 'tasks',
    role: 'admin',
    summary: 'Create a task',
    description: 'Returns the task with its HMAC `secret`, shown this once. 409 if the name exists.',
    body: TaskSpec,
    status: 201,
    response: CreatedTask,
    errors: [409, 413],
  }),
  batchTasks: route({
    method: 'POST',
    path: '/v1/tasks:batch',
    tag: 'tasks',
    role: 'admin',
    summary: 'Create or replace up to 1,000 tasks',
    description:
      "One transaction, all or nothing; errors name the item, e.g. `tasks[3].schedule.cron`. `?dryRun=true` stores nothing and answers each task's `changes`.",
    body: TaskBatchRequest,
    query: ChangeQuery,
    status: 200,
    response: TaskBatchResponse,
    errors: [409, 413],
  }),
  applyTasks: route({
    method: 'POST',
    path: '/v1/tasks:apply',
    tag: 'tasks',
    role: 'admin',
    summary: 'Make the managed tasks what a file declares',
    description:
      'Creates, updates (only what differs) and, with `prune`, deletes the tasks `managedBy` manages, in ' +
      'one transaction with one audit entry per task; `dryRun` only answers the diff. Tasks managed by ' +
      'nobody or someone else are never touched: declaring one is a 409. Admin only, dry run too: a diff ' +
      'would tell whether a guessed secret matches.',
    body: TaskApplyRequest,
    status: 200,
    response: TaskApplyResponse,
    errors: [409, 413],
  }),
  getTask: route({
    method: 'GET',
    path: '/v1/tasks/{name}',
    tag: 'tasks',
    role: 'viewer',
    summary: 'A task, its next fire times and its last execution',
    description:
      '`upcoming`: the next slots to fire from now (five unless `upcoming` asks for more), the planned ones included; `lastExecution`: the latest due one, never a slot still to come.',
    query: TaskDetailQuery,
    status: 200,
    response: TaskDetail,
  }),
  putTask: route({
    method: 'PUT',
    path: '/v1/tasks/{name}',
    tag: 'tasks',
    role: 'admin',
    summary: 'Create or replace a task',
    description:
      '201 when created (with its secret), 200 when replaced. A task a manager owns (`managedBy`, set by ' +
      '`punctual apply`) is replaced only by a body naming that manager: 409 `not_managed` otherwise. ' +
      '`?dryRun=true` stores nothing and answers the task as it would be with `changes`: the next `horizon` ' +
      'fire times before and after, what becomes of its planned executions, warnings.',
    body: TaskPutBody,
    query: ChangeQuery,
    status: 200,
    alsoStatus: [201],
    response: WrittenTask,
    errors: [409, 413],
  }),
  patchTask: route({
    method: 'PATCH',
    path: '/v1/tasks/{name}',
    tag: 'tasks',
    role: 'admin',
    summary: 'Update part of a task',
    description:
      'Send `If-Match: <version>` to refuse (409) if the task changed meanwhile. `?dryRun=true` stores nothing and answers the task as it would be with `changes`.',
    body: TaskPatch,
    query: ChangeQuery,
    status: 200,
    response: PatchedTask,
    errors: [409, 413],
    headers: [{ name: 'If-Match', description: 'the task version this change is based on; 409 if it moved on' }],
  }),
  deleteTask: route({
    method: 'DELETE',
    path: '/v1/tasks/{name}',
    tag: 'tasks',
    role: 'admin',
    summary: 'Delete a task',
    description:
      'Pending executions are cancelled; the history is kept, still listed under the name by `GET /v1/tasks/{name}/executions`.',
    status: 204,
  }),
  pauseTask: route({
    method: 'POST',
    path: '/v1/tasks/{name}/pause',
    tag: 'tasks',
    role: 'operator',
    summary: 'Pause a task',
    description:
      'No new slots; slots due and not started end skipped(paused); planned slots still to come are withdrawn. Executions in progress finish their slot unless `cancel` is true.',
    body: PauseBody,
    status: 200,
    response: Task,
  }),
  resumeTask: route({
    method: 'POST',
    path: '/v1/tasks/{name}/resume',
    tag: 'tasks',
    role: 'operator',
    summary: 'Resume a task',
    description: 'catchUp: skip | latest | all — what to do with the slots of the pause.',
    body: ResumeBody,
    status: 200,
    response: Task,
  }),
  triggerTask: route({
    method: 'POST',
    path: '/v1/tasks/{name}/trigger',
    tag: 'tasks',
    role: 'operator',
    summary: 'Run a task now',
    description: 'Optionally with another payload; runs even while the task is paused.',
    body: TriggerBody,
    status: 202,
    response: Execution,
  }),
  backfillTask: route({
    method: 'POST',
    path: '/v1/tasks/{name}/backfill',
    tag: 'tasks',
    role: 'operator',
    summary: 'Run past slots',
    description:
      'Plans the slots in [from, to] (at most maxRuns, ≤ 1000) to run now: those with no execution, and those decided ' +
      'without running (missed, skipped), each as its own row; a slot that ran, runs or is planned is left alone.',
    body: BackfillBody,
    status: 202,
    response: BackfillResponse,
  }),
  taskExecutions: route({
    method: 'GET',
    path: '/v1/tasks/{name}/executions',
    tag: 'tasks',
    role: 'viewer',
    summary: "A task's executions, newest first",
    description:
      'The due executions recorded under the name, newest slot first; `planned=true` adds the planned ones ' +
      "still to come. A deleted task's history stays here under its name: 404 only when no task has the " +
      'name and nothing was ever recorded under it. When a new task takes the name, its executions and the ' +
      "deleted task's are listed together, the deleted task's marked `taskDeleted`.",
    query: TaskExecutionsQuery,
    status: 200,
    response: ExecutionPage,
  }),
  taskTimeline: route({
    method: 'GET',
    path: '/v1/tasks/{name}/timeline',
    tag: 'tasks',
    role: 'viewer',
    summary: 'Every slot of a task in a range, each with its outcome and why',
    description:
      "Every slot the task's schedule defines in [from, to] (at most 31 days), computed by the versions of " +
      'the task in force at each time, merged with its executions (runs by hand, backfills and catch-up ' +
      'runs included), oldest first: an `outcome`, a `reason` code and a `detail` sentence naming the ' +
      "cause. A deleted task's timeline is read by its name. Pass `nextCursor` back as `cursor` with the " +
      'same range.',
    query: TimelineQuery,
    status: 200,
    response: TimelinePage,
  }),
  taskVersions: route({
    method: 'GET',
    path: '/v1/tasks/{name}/versions',
    tag: 'tasks',
    role: 'viewer',
    summary: "A task's versions, newest first",
    description:
      "Every change of the task — create, edit, pause, resume, rollback, a calendar's edit — kept whole " +
      "with who made it, when and why; a deleted task's too, by its name. Version numbers go on across the " +
      'tasks a name has had.',
    query: PageQuery,
    status: 200,
    response: TaskVersionPage,
  }),
  taskVersion: route({
    method: 'GET',
    path: '/v1/tasks/{name}/versions/{version}',
    tag: 'tasks',
    role: 'viewer',
    summary: 'One version of a task and how it differs from another',
    description:
      'The fields that differ from `against` (default: the version before it), secret fields without their values. 404 `not_found` for a version the name never had.',
    query: TaskVersionQuery,
    status: 200,
    response: TaskVersionDetail,
  }),
  rollbackTask: route({
    method: 'POST',
    path: '/v1/tasks/{name}/rollback',
    tag: 'tasks',
    role: 'admin',
    summary: 'Make a new version equal to an old one',
    description:
      "Replaces the task's definition with the one `version` left (a deleted task is restored: created " +
      'again, with a new secret shown once), as a PUT does: no slot lost or doubled; audited. `dryRun` ' +
      'answers what it would do (`changes`) and changes nothing. 404 `not_found` for a version the name ' +
      'never had.',
    body: RollbackBody,
    status: 200,
    response: WrittenTask,
    errors: [409],
  }),
  listExecutions: route({
    method: 'GET',
    path: '/v1/executions',
    tag: 'executions',
    role: 'viewer',
    summary: 'Executions across tasks, newest first',
    description:
      'Due executions, newest slot first; `planned=true` adds the planned ones still to come. `status=dead` is the dead letter; `task` also finds the history of deleted tasks of that name.',
    query: ExecutionListQuery,
    status: 200,
    response: ExecutionPage,
  }),
  getExecution: route({
    method: 'GET',
    path: '/v1/executions/{id}',
    tag: 'executions',
    role: 'viewer',
    summary: 'One execution and its history of state changes',
    status: 200,
    response: ExecutionDetail,
  }),
  retryExecution: route({
    method: 'POST',
    path: '/v1/executions/{id}/retry',
    tag: 'executions',
    role: 'operator',
    summary: 'Replay a dead execution',
    status: 202,
    response: Execution,
    errors: [409],
  }),
  cancelExecution: route({
    method: 'POST',
    path: '/v1/executions/{id}/cancel',
    tag: 'executions',
    role: 'operator',
    summary: 'Cancel a pending or running execution',
    status: 200,
    response: Execution,
    errors: [409],
  }),
  previewSchedule: route({
    method: 'POST',
    path: '/v1/schedules/preview',
    tag: 'schedules',
    role: 'viewer',
    summary: 'Preview fire times',
    description: 'The next `count` fire times after `from`: `at` in UTC, `local` with the zone offset.',
    body: PreviewRequest,
    status: 200,
    response: PreviewResponse,
  }),
  listCalendars: route({
    method: 'GET',
    path: '/v1/calendars',
    tag: 'calendars',
    role: 'viewer',
    summary: 'List calendars of excluded days',
    status: 200,
    response: CalendarList,
  }),
  getCalendar: route({
    method: 'GET',
    path: '/v1/calendars/{name}',
    tag: 'calendars',
    role: 'viewer',
    summary: 'A calendar and the tasks that exclude it',
    status: 200,
    response: Calendar,
  }),
  calendarDays: route({
    method: 'GET',
    path: '/v1/calendars/{name}/days',
    tag: 'calendars',
    role: 'viewer',
    summary: "A calendar's excluded days of one year",
    description:
      'Every local date of `year` the calendar excludes — its dates and the days of its rules — as a schedule excluding it skips them.',
    query: CalendarDaysQuery,
    status: 200,
    response: CalendarDays,
  }),
  putCalendar: route({
    method: 'PUT',
    path: '/v1/calendars/{name}',
    tag: 'calendars',
    role: 'admin',
    summary: 'Create or replace a calendar',
    description:
      '201 when created, 200 when replaced. A replaced calendar re-plans the tasks that exclude it, as a ' +
      'schedule edit does: no slot lost or doubled. A calendar a manager owns (`managedBy`, set by ' +
      '`punctual apply`) is replaced only by a body naming that manager: 409 `not_managed` otherwise. ' +
      '`?dryRun=true` stores nothing and answers, for each task that excludes it, what the change would do ' +
      '(`changes`).',
    body: CalendarPutBody,
    query: ChangeQuery,
    status: 200,
    alsoStatus: [201],
    response: WrittenCalendar,
    errors: [409, 413],
  }),
  deleteCalendar: route({
    method: 'DELETE',
    path: '/v1/calendars/{name}',
    tag: 'calendars',
    role: 'admin',
    summary: 'Delete a calendar',
    description: '409 while a task excludes it.',
    status: 204,
    errors: [409],
  }),
  listHandlers: route({
    method: 'GET',
    path: '/v1/handlers',
    cluster: 'shared',
    tag: 'handlers',
    role: 'viewer',
    summary: 'Handlers offered by the live workers',
    status: 200,
    response: HandlerList,
  }),
  getCluster: route({
    method: 'GET',
    path: '/v1/cluster',
    cluster: 'shared',
    tag: 'cluster',
    role: 'viewer',
    summary: 'Leader, workers, queue depth and clock offsets',
    status: 200,
    response: Cluster,
  }),
  getMe: route({
    method: 'GET',
    path: '/v1/me',
    cluster: 'shared',
    tag: 'api-keys',
    role: 'viewer',
    summary: 'Who the caller is: its actor name and role',
    description: 'What a key or a console session may do, without trying.',
    status: 200,
    response: Me,
  }),
  createApiKey: route({
    method: 'POST',
    path: '/v1/api-keys',
    cluster: 'whole',
    tag: 'api-keys',
    role: 'admin',
    summary: 'Create an API key',
    description: 'The key is in the response, this once; only its hash is stored.',
    body: CreateApiKeyBody,
    status: 201,
    response: CreatedApiKey,
  }),
  listApiKeys: route({
    method: 'GET',
    path: '/v1/api-keys',
    cluster: 'whole',
    tag: 'api-keys',
    role: 'admin',
    summary: 'List API keys (never the keys themselves)',
    status: 200,
    response: ApiKeyList,
  }),
  revokeApiKey: route({
    method: 'DELETE',
    path: '/v1/api-keys/{id}',
    cluster: 'whole',
    tag: 'api-keys',
    role: 'admin',
    summary: 'Revoke an API key',
    status: 204,
  }),
  listNamespaces: route({
    method: 'GET',
    path: '/v1/namespaces',
    cluster: 'shared',
    tag: 'namespaces',
    role: 'viewer',
    summary: 'The namespaces the caller may see, with their quotas and use',
    description:
      'Keyset-paginated by name: pass nextCursor back as cursor. `prefix` keeps the names that start with it.',
    query: NamespaceListQuery,
    status: 200,
    response: NamespacePage,
  }),
  getNamespace: route({
    method: 'GET',
    path: '/v1/namespaces/{namespace}',
    cluster: 'shared',
    tag: 'namespaces',
    role: 'viewer',
    summary: 'A namespace: its quotas and what it uses of each',
    description: 'A namespace the key may not see is a 404, as one that does not exist.',
    status: 200,
    response: Namespace,
  }),
  putNamespace: route({
    method: 'PUT',
    path: '/v1/namespaces/{namespace}',
    cluster: 'whole',
    tag: 'namespaces',
    role: 'admin',
    summary: 'Create a namespace or replace its description and quotas',
    description:
      '201 when created, 200 when replaced. A quota lowered below what the namespace uses stops new ' +
      'tasks (or runs) until its use is under it; nothing stored is removed. Admin of the whole cluster only.',
    body: NamespacePutBody,
    status: 200,
    alsoStatus: [201],
    response: Namespace,
  }),
  deleteNamespace: route({
    method: 'DELETE',
    path: '/v1/namespaces/{namespace}',
    cluster: 'whole',
    tag: 'namespaces',
    role: 'admin',
    summary: 'Delete an empty namespace',
    description:
      '409 `namespace_in_use` while it holds a task or a calendar. `default` cannot be deleted. Admin of the whole cluster only.',
    status: 204,
    errors: [409],
  }),
  listAudit: route({
    method: 'GET',
    path: '/v1/audit',
    tag: 'audit',
    role: 'admin',
    summary: 'The audit log, newest first',
    description: 'Every admin change: actor key, action, target, before/after.',
    query: AuditQuery,
    status: 200,
    response: AuditPage,
  }),
} as const;

/** What the API reads a request without a body as: none, an empty one, or one not sent as `application/json`. */
export const MISSING_BODY: Readonly<Record<string, never>> = Object.freeze({});

/**
 * Whether a route's request body may be left out: exactly when its schema accepts
 * {@link MISSING_BODY} (pause, resume, trigger, a patch). The OpenAPI document says so.
 */
export function isBodyOptional(route: RouteDef): boolean {
  return route.body !== undefined && route.body.safeParse(MISSING_BODY).success;
}

export type Routes = typeof routes;
export type RouteId = keyof Routes;

/** The request body a route takes (what a caller writes). */
export type BodyOf<R extends RouteDef> = R['body'] extends z.ZodType ? z.input<R['body']> : undefined;
/** The query a route takes. */
export type QueryOf<R extends RouteDef> = R['query'] extends z.ZodType ? z.input<R['query']> : undefined;
/** What a route answers on success. */
export type ResponseOf<R extends RouteDef> = R['response'] extends z.ZodType ? z.output<R['response']> : void;
/** The names of a route's path parameters: `'name'` for `/v1/tasks/{name}`. */
export type ParamsOf<P extends string> = P extends `${string}{${infer N}}${infer Rest}` ? N | ParamsOf<Rest> : never;
