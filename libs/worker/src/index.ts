/**
 * The worker role, also what a host app embeds (`PunctualWorkerModule`, `createWorker`): jobs
 * taken from the queue, claims fenced in Postgres with flow control and overlap, handlers run
 * under a lease with a timeout, outcomes and retries recorded, notifications delivered.
 *
 * @imports @punctual/clock, @punctual/config, @punctual/contract, @punctual/db, @punctual/handlers,
 *   @punctual/logging, @punctual/metrics, @punctual/planning, @punctual/queue, @punctual/redis, @punctual/tracing
 * @packageDocumentation
 */
export { AttemptAbortedError, AttemptControl, type AbortCause } from './attempt-control.js';
export { retryDelayMs } from './backoff.js';
export { Batcher } from './batcher.js';
export { holdBeforeSlotMs } from './claim-checks.js';
export { type ClaimRequest, type Disposition, type RunOutcome, type WaitsFor } from './disposition.js';
export { claimContextOf, ExecutionClaimer } from './execution-claimer.js';
export { ExecutionRunner, type RunOptions, type RunRequest } from './execution-runner.js';
export { type FailedAttempt, type FailureVerdict, judgeFailure } from './failure-judgement.js';
export { leasePolicy, type LeasePolicy } from './lease-policy.js';
export { OutboxNotifier } from './outbox-notifier.js';
export { LeaseKeeper } from './lease-keeper.js';
export { type Promotable, waitBeforeRetryMs, WaitingRoom, wakePassedOn } from './waiting-room.js';
export { WorkerCoreModule } from './worker.module.js';
export { WorkerService } from './worker.service.js';
export { createWorker, type CreateWorkerOptions, type PunctualWorker } from './create-worker.js';
export { type PunctualWorkerAsyncOptions, PunctualWorkerModule } from './punctual-worker.module.js';
export { type PunctualWorkerOptions, workerConfig } from './worker-options.js';
