import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const LAG_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The Prometheus metrics of DESIGN §8, one registry per process, prefix `punctual_`. */
export class Metrics {
  readonly registry = new Registry();
  readonly leader = new Gauge({ name: 'punctual_leader', help: '1 while this scheduler leads', registers: [this.registry] });
  readonly leaderChanges = new Counter({ name: 'punctual_leader_changes_total', help: 'Times this scheduler gained or lost leadership', labelNames: ['change'], registers: [this.registry] });
  readonly planned = new Counter({ name: 'punctual_planned_total', help: 'Slots planned into executions', registers: [this.registry] });
  readonly missed = new Counter({ name: 'punctual_missed_total', help: 'Slots not run because they were late (misfire policy)', registers: [this.registry] });
  readonly dispatchLag = new Histogram({ name: 'punctual_dispatch_lag_seconds', help: 'queued − (fire_at − FIRE_LEAD_MS): how late a job reached the queue', buckets: LAG_BUCKETS, registers: [this.registry] });
  readonly startLag = new Histogram({ name: 'punctual_start_lag_seconds', help: 'started − fire_at (first attempts)', buckets: LAG_BUCKETS, registers: [this.registry] });
  readonly executions = new Counter({ name: 'punctual_executions_total', help: 'Attempts finished, by outcome', labelNames: ['status', 'handler'], registers: [this.registry] });
  readonly skipped = new Counter({ name: 'punctual_skipped_total', help: 'Executions skipped, by reason', labelNames: ['reason'], registers: [this.registry] });
  readonly handlerDuration = new Histogram({ name: 'punctual_handler_duration_seconds', help: 'Handler run time', labelNames: ['handler'], registers: [this.registry] });
  readonly queueDepth = new Gauge({ name: 'punctual_queue_depth', help: 'Jobs in the executions queue, by state', labelNames: ['state'], registers: [this.registry] });
  readonly outboxPending = new Gauge({ name: 'punctual_outbox_pending', help: 'Notifications not yet delivered', registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'punctual_process_' });
  }
}
