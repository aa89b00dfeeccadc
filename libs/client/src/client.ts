import {
  type AuditEntry,
  type AuditQuery,
  type BackfillBody,
  type CalendarPutBody,
  type CatchUp,
  type CreateApiKeyBody,
  type Execution,
  type ExecutionListQuery,
  type Namespace,
  type NamespaceListQuery,
  type NamespacePutBody,
  type PreviewRequest,
  routes,
  type TaskApplyRequest,
  type Task,
  type TaskDetailQuery,
  type TaskExecutionsQuery,
  type TaskListQuery,
  type TaskPatch,
  type TaskPutBody,
  type TaskSpec,
  type TimelineItem,
  type TimelineQuery,
  type TaskVersion,
  type TaskVersionQuery,
  type RollbackBody,
} from '@punctual/contract';
import { Paginated } from './paginated.js';
import { type PunctualClientOptions, Transport } from './transport.js';

/**
 * A typed client of Punctual's HTTP API, over `fetch` only: it runs in Node 20 and in a browser.
 *
 * ```ts
 * const client = new PunctualClient({ baseUrl: 'http://127.0.0.1:3000', apiKey });
 * await client.tasks.create({ name: 'hello', handler: 'log', schedule: { cron: '0 9 * * *' } });
 * for await (const task of client.tasks.list({ label: ['team=billing'] })) console.log(task.name);
 * ```
 * With `namespace: 'team-a'` every call of a namespace acts in that one (`?namespace=team-a`).
 * Error answers throw {@link PunctualApiError} with the status, `code`, `message` and `details`.
 */
export class PunctualClient {
  private readonly http: Transport;

  constructor(options: PunctualClientOptions) {
    this.http = new Transport(options);
  }

  readonly tasks = {
    /** Tasks by name; iterate to walk every page. */
    list: (query: Omit<TaskListQuery, 'cursor'> = {}) =>
      new Paginated<Task>((cursor) => this.http.call(routes.listTasks, { query: { ...query, cursor } })),
    /** The task, its next slots to fire from now (five unless `upcoming` asks for up to 100) and its latest due execution. */
    get: (name: string, query: TaskDetailQuery = {}) => this.http.call(routes.getTask, { params: { name }, query }),
    /** The answer carries the task's `secret`, shown this once, and `warnings`. */
    create: (spec: TaskSpec) => this.http.call(routes.createTask, { body: spec }),
    /** Creates (the answer then has `secret`) or replaces the task named `name`. */
    put: (name: string, spec: TaskPutBody) => this.http.call(routes.putTask, { params: { name }, body: spec }),
    /** With `ifMatch` (the version you read), a concurrent change answers 409 instead of being overwritten. */
    patch: (name: string, patch: TaskPatch, options: { ifMatch?: number } = {}) =>
      this.http.call(routes.patchTask, {
        params: { name },
        body: patch,
        headers: options.ifMatch === undefined ? {} : { 'if-match': String(options.ifMatch) },
      }),
    delete: (name: string) => this.http.call(routes.deleteTask, { params: { name } }),
    /** With `cancel`, executions in progress are cancelled too (by default they finish their slot). */
    pause: (name: string, options: { cancel?: boolean; note?: string } = {}) =>
      this.http.call(routes.pauseTask, { params: { name }, body: options }),
    resume: (name: string, options: { catchUp?: CatchUp } = {}) =>
      this.http.call(routes.resumeTask, { params: { name }, body: options }),
    trigger: (name: string, options: { payload?: Record<string, unknown> } = {}) =>
      this.http.call(routes.triggerTask, { params: { name }, body: options }),
    backfill: (name: string, window: BackfillBody) =>
      this.http.call(routes.backfillTask, { params: { name }, body: window }),
    /**
     * The executions recorded under the name, newest first — a deleted task's too. Only due ones
     * unless `planned: true` (or a `status` of `scheduled`/`queued`) asks for the slots planned ahead.
     */
    executions: (name: string, query: Omit<TaskExecutionsQuery, 'cursor'> = {}) =>
      new Paginated<Execution>((cursor) =>
        this.http.call(routes.taskExecutions, { params: { name }, query: { ...query, cursor } }),
      ),
    /**
     * Every slot of the task in `[from, to]` (at most 31 days; default the day up to now), oldest
     * first, each with its outcome, a reason code and a sentence naming the cause — a deleted task's too.
     */
    timeline: (name: string, query: Omit<TimelineQuery, 'cursor'> = {}) =>
      new Paginated<TimelineItem>((cursor) =>
        this.http.call(routes.taskTimeline, { params: { name }, query: { ...query, cursor } }),
      ),
    /** The task's versions, newest first — a deleted task's too — each whole, with who made it, when and why. */
    versions: (name: string, query: { limit?: number } = {}) =>
      new Paginated<TaskVersion>((cursor) =>
        this.http.call(routes.taskVersions, { params: { name }, query: { ...query, cursor } }),
      ),
    /** One version and the fields that differ from `against` (default: the version before it). */
    version: (name: string, version: number, query: TaskVersionQuery = {}) =>
      this.http.call(routes.taskVersion, { params: { name, version: String(version) }, query }),
    /** A new version equal to `version` (a deleted task: restored); `dryRun` answers what it would do and changes nothing. */
    rollback: (name: string, body: RollbackBody) => this.http.call(routes.rollbackTask, { params: { name }, body }),
    /** Creates or replaces up to 1,000 tasks in one transaction, all or nothing. */
    batch: (specs: TaskSpec[]) => this.http.call(routes.batchTasks, { body: { tasks: specs } }),
    /**
     * Makes the tasks `managedBy` manages what `tasks` declares, in one transaction (`dryRun`: only
     * answers what would change). Tasks managed by nobody or someone else are never touched.
     */
    apply: (request: TaskApplyRequest) => this.http.call(routes.applyTasks, { body: request }),
  };

  readonly executions = {
    /** Due executions, newest first; `planned: true` adds the slots planned ahead. */
    list: (query: Omit<ExecutionListQuery, 'cursor'> = {}) =>
      new Paginated<Execution>((cursor) => this.http.call(routes.listExecutions, { query: { ...query, cursor } })),
    get: (id: string) => this.http.call(routes.getExecution, { params: { id } }),
    retry: (id: string) => this.http.call(routes.retryExecution, { params: { id } }),
    cancel: (id: string) => this.http.call(routes.cancelExecution, { params: { id } }),
  };

  readonly schedules = {
    preview: (request: PreviewRequest) => this.http.call(routes.previewSchedule, { body: request }),
  };

  /** Calendars of excluded days: a task's `schedule.exclude` names them. */
  readonly calendars = {
    list: async () => (await this.http.call(routes.listCalendars)).items,
    /** The calendar and the tasks that exclude it. */
    get: (name: string) => this.http.call(routes.getCalendar, { params: { name } }),
    /** Every local date of `year` (default: this year, UTC) the calendar excludes. */
    days: (name: string, year?: number) => this.http.call(routes.calendarDays, { params: { name }, query: { year } }),
    /** Creates or replaces a calendar; the tasks that exclude it are re-planned. */
    put: (name: string, body: CalendarPutBody) => this.http.call(routes.putCalendar, { params: { name }, body }),
    /** Refused (409) while a task excludes it. */
    delete: (name: string) => this.http.call(routes.deleteCalendar, { params: { name } }),
  };

  readonly handlers = {
    list: async () => (await this.http.call(routes.listHandlers)).items,
  };

  /** Who this client is to the API: its actor name and role. */
  me() {
    return this.http.call(routes.getMe);
  }

  readonly apiKeys = {
    /** The answer carries the key itself, shown this once. */
    create: (body: CreateApiKeyBody) => this.http.call(routes.createApiKey, { body }),
    list: async () => (await this.http.call(routes.listApiKeys)).items,
    revoke: (id: string) => this.http.call(routes.revokeApiKey, { params: { id } }),
  };

  readonly audit = {
    list: (query: Omit<AuditQuery, 'cursor'> = {}) =>
      new Paginated<AuditEntry>((cursor) => this.http.call(routes.listAudit, { query: { ...query, cursor } })),
  };

  readonly cluster = {
    get: () => this.http.call(routes.getCluster),
  };

  /** Namespaces: those the key may see, each with its quotas and use. Changes need a key of the whole cluster. */
  readonly namespaces = {
    /** By name, a page at a time; `prefix` keeps those whose name starts with it. */
    list: (query: Omit<NamespaceListQuery, 'cursor'> = {}) =>
      new Paginated<Namespace>((cursor) => this.http.call(routes.listNamespaces, { query: { ...query, cursor } })),
    get: (namespace: string) => this.http.call(routes.getNamespace, { params: { namespace } }),
    /** Creates (201) or replaces (200) the namespace's description and quotas. */
    put: (namespace: string, body: NamespacePutBody) =>
      this.http.call(routes.putNamespace, { params: { namespace }, body }),
    /** Refused (409) while it holds a task or a calendar. */
    delete: (namespace: string) => this.http.call(routes.deleteNamespace, { params: { namespace } }),
  };
}
