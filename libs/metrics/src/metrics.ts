import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { bestEffortFailures } from './best-effort.js';

const LAG_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** What a worker reports about its own load, read at each scrape. */
interface WorkerLoad {
  worker: string;
  concurrency: number;
  running: () => number;
}

/**
 * The Prometheus metrics of DESIGN §8, one registry per process, prefix `punctual_`. The dashboard
 * and alert rules in deploy/observability query these names; a test checks they are exported.
 */
export class Metrics {
  readonly registry = new Registry();
  private workerLoad: WorkerLoad | null = null;

  readonly leader = new Gauge({
    name: 'punctual_leader',
    help: '1 while this scheduler leads the shard',
    labelNames: ['shard'],
    registers: [this.registry],
  });
  readonly backlogWaiting = new Gauge({
    name: 'punctual_backlog_waiting',
    help: 'backlog runs (catch-ups, backfills) due and waiting at the shard leader for their turn within CATCHUP_RATE',
    labelNames: ['shard'],
    registers: [this.registry],
  });
  /** Deprecated: punctual_backlog_waiting's name until this release, set with it (see {@link backlog}). */
  private readonly backlogHeldAlias = new Gauge({
    name: 'punctual_backlog_held',
    help: 'Deprecated, removed in the next release: punctual_backlog_waiting under its former name',
    labelNames: ['shard'],
    registers: [this.registry],
  });
  /** History lifecycle (DESIGN §3): how old, how large, what went, as the shard-0 leader's pass found them. */
  readonly historyOldest = new Gauge({
    name: 'punctual_history_oldest_seconds',
    help: 'age of the oldest row a growing table keeps (task_execution: the start of its oldest partition)',
    labelNames: ['table'],
    registers: [this.registry],
  });
  readonly historyKept = new Gauge({
    name: 'punctual_history_kept_seconds',
    help: 'the longest the retention rules keep a row of the table (an oldest row much older: pruning is behind)',
    labelNames: ['table'],
    registers: [this.registry],
  });
  readonly historyPruned = new Counter({
    name: 'punctual_history_pruned_total',
    help: 'rows removed by the retention rules, by table',
    labelNames: ['table'],
    registers: [this.registry],
  });
  readonly historyRows = new Gauge({
    name: 'punctual_history_rows',
    help: "rows of a growing table (the planner's estimate)",
    labelNames: ['table'],
    registers: [this.registry],
  });
  readonly historyBytes = new Gauge({
    name: 'punctual_history_bytes',
    help: 'bytes of a growing table, its indexes and partitions included',
    labelNames: ['table'],
    registers: [this.registry],
  });
  readonly historyPartitions = new Gauge({
    name: 'punctual_history_partitions',
    help: 'partitions of task_execution (each with its twin of execution_event)',
    registers: [this.registry],
  });
  readonly historyLiveFrom = new Gauge({
    name: 'punctual_history_live_from_timestamp_seconds',
    help: 'the live horizon: no execution that can still change has an older slot (0: from the beginning)',
    registers: [this.registry],
  });
  readonly namespaceQuotaUsed = new Gauge({
    name: 'punctual_namespace_quota_used',
    help: 'what a namespace uses of a quota, for the namespaces nearest their quotas only (see NAMESPACE_METRICS_TOP)',
    labelNames: ['namespace', 'quota'],
    registers: [this.registry],
  });
  readonly namespaceQuotaLimit = new Gauge({
    name: 'punctual_namespace_quota_limit',
    help: 'the quota itself, beside punctual_namespace_quota_used',
    labelNames: ['namespace', 'quota'],
    registers: [this.registry],
  });
  readonly leaderChanges = new Counter({
    name: 'punctual_leader_changes_total',
    help: 'Times this scheduler gained or lost leadership',
    labelNames: ['change'],
    registers: [this.registry],
  });
  readonly planned = new Counter({
    name: 'punctual_planned_total',
    help: 'Slots planned into executions',
    registers: [this.registry],
  });
  readonly fired = new Counter({
    name: 'punctual_fired_total',
    help: 'Planned executions pushed to the queue (fired)',
    registers: [this.registry],
  });
  readonly parkedAtFire = new Counter({
    name: 'punctual_parked_at_fire_total',
    help: "On-time slots the leader parked as they fired, behind their task's own backlog runs still waiting for their turn: no job until the run ahead hands them their turn",
    registers: [this.registry],
  });
  readonly missed = new Counter({
    name: 'punctual_missed_total',
    help: 'Slots not run because they were late (misfire policy)',
    registers: [this.registry],
  });
  readonly dispatchLag = new Histogram({
    name: 'punctual_dispatch_lag_seconds',
    help: 'queued − (fire_at − FIRE_LEAD_MS): how late a job reached the queue',
    buckets: LAG_BUCKETS,
    registers: [this.registry],
  });
  readonly startLag = new Histogram({
    name: 'punctual_start_lag_seconds',
    help: 'started − fire_at (first attempts)',
    buckets: LAG_BUCKETS,
    registers: [this.registry],
  });
  readonly executions = new Counter({
    name: 'punctual_executions_total',
    help: 'Attempts finished, by outcome',
    labelNames: ['status', 'handler'],
    registers: [this.registry],
  });
  readonly handlersOverrunning = new Gauge({
    name: 'punctual_handlers_overrunning',
    help: 'Handlers still running after their attempt was aborted (timeout, cancel, lease lost, shutdown): each keeps its handler slot and its concurrency key permit until it settles',
    registers: [this.registry],
  });
  readonly waitingForWorker = new Gauge({
    name: 'punctual_runs_waiting_for_worker',
    help: "Due runs of a handler no live worker offers, waiting in its queue for one (set by shard 0's leader)",
    labelNames: ['handler'],
    registers: [this.registry],
  });
  readonly moved = new Counter({
    name: 'punctual_runs_moved_total',
    help: "Jobs this worker moved to the queue of their run's handler, which it does not offer: the task's handler was changed after the job was pushed",
    labelNames: ['handler'],
    registers: [this.registry],
  });
  /** Deprecated: punctual_runs_moved_total's name until this release, counted with it (see {@link runMoved}). */
  private readonly sentBackAlias = new Counter({
    name: 'punctual_runs_sent_back_total',
    help: 'Deprecated, removed in the next release: punctual_runs_moved_total under its former name',
    labelNames: ['handler'],
    registers: [this.registry],
  });
  readonly claims = new Counter({
    name: 'punctual_claims_total',
    help:
      'Claims of attempts by how they were decided: claimed (one statement, no read), run (read and ' +
      'judged), parked (its turn not come), skipped, held (flow control), later (the job comes back), ' +
      'dropped',
    labelNames: ['verdict'],
    registers: [this.registry],
  });
  readonly claimReads = new Counter({
    name: 'punctual_claim_reads_total',
    help: 'Reads of a claim for the judgement (a claim the one-statement claim did not start)',
    registers: [this.registry],
  });
  readonly turnsHanded = new Counter({
    name: 'punctual_turns_handed_total',
    help: 'Parked slots handed their turn: by the end of the run ahead, or by the relay',
    labelNames: ['by'],
    registers: [this.registry],
  });
  readonly slots = new Counter({
    name: 'punctual_slots_total',
    help: "Slots whose outcome was decided, where it was decided, by outcome and reason: the codes of a task's timeline (reason none when nothing needs explaining)",
    labelNames: ['outcome', 'reason'],
    registers: [this.registry],
  });
  readonly skipped = new Counter({
    name: 'punctual_skipped_total',
    help: 'Executions skipped, by reason',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly flowWaiting = new Gauge({
    name: 'punctual_flow_waiting',
    help: 'Runs held back by flow control, by key (FLOW_METRICS_KEYS and the busiest FLOW_METRICS_TOP)',
    labelNames: ['key'],
    registers: [this.registry],
  });
  readonly flowRunning = new Gauge({
    name: 'punctual_flow_running',
    help: 'Runs holding a concurrency permit, by key (the same keys as punctual_flow_waiting)',
    labelNames: ['key'],
    registers: [this.registry],
  });
  readonly flowWait = new Histogram({
    name: 'punctual_flow_wait_seconds',
    help: 'How long a run was held back by flow control before it started',
    buckets: [...LAG_BUCKETS, 120, 300, 900, 3600],
    registers: [this.registry],
  });
  readonly handlerDuration = new Histogram({
    name: 'punctual_handler_duration_seconds',
    help: 'Handler run time',
    labelNames: ['handler'],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'punctual_queue_depth',
    help: "Jobs in the executions queues (one per handler), by state (set by shard 0's leader)",
    labelNames: ['state'],
    registers: [this.registry],
  });
  readonly outboxPending = new Gauge({
    name: 'punctual_outbox_pending',
    help: 'Notifications not yet delivered',
    registers: [this.registry],
  });
  readonly outboxOldestPending = new Gauge({
    name: 'punctual_outbox_oldest_pending_seconds',
    help: 'Age of the oldest notification not yet delivered (0 when none)',
    registers: [this.registry],
  });
  readonly deadLetters = new Gauge({
    name: 'punctual_dead_letters',
    help: 'Executions in the dead state (the dead letter), counted in Postgres',
    registers: [this.registry],
  });
  readonly clockOffset = new Gauge({
    name: 'punctual_clock_offset_seconds',
    help: "Offset of this process's clock from Postgres' clock (the reference)",
    labelNames: ['role'],
    registers: [this.registry],
  });
  readonly taskErrors = new Counter({
    name: 'punctual_task_errors_total',
    help: 'Planner errors on a task (its schedule could not be computed)',
    registers: [this.registry],
  });
  readonly redisMaxmemoryPolicy = new Gauge({
    name: 'punctual_redis_maxmemory_policy',
    help: "1 for Redis' observed maxmemory-policy (unknown when CONFIG GET is refused)",
    labelNames: ['policy'],
    registers: [this.registry],
  });
  // Per task, only for tasks with an `slo` (opt-in: task names are user data, so cardinality is bounded by choice).
  readonly taskSlots = new Counter({
    name: 'punctual_task_slots_total',
    help: 'Slots of a task with an slo that came due and were decided: started, or given up as late',
    labelNames: ['task'],
    registers: [this.registry],
  });
  readonly taskLateSlots = new Counter({
    name: 'punctual_task_late_slots_total',
    help: 'Slots of a task with an slo that did not start within slo.startWithin (started later, or never)',
    labelNames: ['task'],
    registers: [this.registry],
  });
  readonly taskLastSuccess = new Gauge({
    name: 'punctual_task_last_success_timestamp_seconds',
    help: "End of the task's latest successful run, Unix seconds (its creation if none); active tasks with an slo",
    labelNames: ['task'],
    registers: [this.registry],
  });
  readonly taskExpectedInterval = new Gauge({
    name: 'punctual_task_expected_interval_seconds',
    help: 'Most time that may pass after the latest success before the next is overdue: to the next slot after it, plus maxDelay and timeout',
    labelNames: ['task'],
    registers: [this.registry],
  });
  readonly workerRunning = new Gauge({
    name: 'punctual_worker_running',
    help: 'Executions this worker is running now',
    labelNames: ['worker'],
    registers: [this.registry],
    collect: () => {
      if (this.workerLoad) this.workerRunning.set({ worker: this.workerLoad.worker }, this.workerLoad.running());
    },
  });
  /** A job moved to the queue of its run's handler (the `moved` disposition), under the metric's name and its deprecated one. */
  runMoved(handler: string): void {
    this.moved.inc({ handler });
    this.sentBackAlias.inc({ handler });
  }

  /** The backlog runs a shard's leader has waiting, under the gauge's name and its deprecated one. */
  backlog(shard: { shard: string }, waiting: number): void {
    this.backlogWaiting.set(shard, waiting);
    this.backlogHeldAlias.set(shard, waiting);
  }

  /** Counts `n` slots decided with `outcome` (`punctual_slots_total`); `reason` null: nothing needs explaining. */
  slotsDecided(outcome: string, reason: string | null, n = 1): void {
    if (n > 0) this.slots.inc({ outcome, reason: reason ?? 'none' }, n);
  }

  readonly workerConcurrency = new Gauge({
    name: 'punctual_worker_concurrency',
    help: 'Executions this worker may run at once (WORKER_CONCURRENCY)',
    labelNames: ['worker'],
    registers: [this.registry],
  });
  /** The process's one counter of failures {@link bestEffort} let pass (see there why it is shared). */
  readonly bestEffortFailures = bestEffortFailures;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'punctual_process_' });
    this.registry.registerMetric(this.bestEffortFailures);
    // Both series exist from the start: rate() and increase() miss the first event of a series born at 1.
    for (const change of ['elected', 'deposed']) this.leaderChanges.inc({ change }, 0);
  }

  /** Reports a worker's load at every scrape: `running()` executions of `concurrency` allowed. */
  trackWorkerLoad(worker: string, concurrency: number, running: () => number): void {
    this.workerLoad = { worker, concurrency, running };
    this.workerConcurrency.set({ worker }, concurrency);
  }

  /** A slot of a task with an slo was decided: it started `lateMs` after its fire time (Infinity: never). */
  /** The namespaces nearest their quotas, and only those: the series of the others are dropped. */
  observeNamespaceQuotas(rows: { namespace: string; quota: string; used: number; limit: number }[]): void {
    this.namespaceQuotaUsed.reset();
    this.namespaceQuotaLimit.reset();
    for (const r of rows) {
      this.namespaceQuotaUsed.set({ namespace: r.namespace, quota: r.quota }, r.used);
      this.namespaceQuotaLimit.set({ namespace: r.namespace, quota: r.quota }, r.limit);
    }
  }

  observeTaskSlot(task: string, lateMs: number, startWithinMs: number, count = 1): void {
    this.taskSlots.inc({ task }, count);
    this.taskLateSlots.inc({ task }, lateMs > startWithinMs ? count : 0);
  }

  /** Records Redis' `maxmemory-policy` (null: it could not be read) as the one series set to 1. */
  observeRedisPolicy(policy: string | null): void {
    this.redisMaxmemoryPolicy.reset();
    this.redisMaxmemoryPolicy.set({ policy: policy ?? 'unknown' }, 1);
  }
}
