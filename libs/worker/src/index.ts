/**
 * The worker role, also what a host app embeds (`PunctualWorkerModule`, `createWorker`): jobs
 * taken from the queue, claims fenced in Postgres with flow control and overlap, handlers run
 * under a lease with a timeout, outcomes and retries recorded, notifications delivered.
 *
 * @imports @punctual/clock, @punctual/config, @punctual/contract, @punctual/db, @punctual/handlers,
 *   @punctual/logging, @punctual/metrics, @punctual/planning, @punctual/queue, @punctual/redis, @punctual/tracing
 * @packageDocumentation
 */
export { AttemptAbortedError, AttemptControl, type AbortCause } from './run/attempt-control.js';
export { retryDelayMs } from './outcome/backoff.js';
export { Batcher } from './batcher.js';
export { waitBeforeSlotMs } from './claim/claim-checks.js';
export { type ClaimRequest, type Disposition, type RunOutcome, type WaitsFor } from './claim/disposition.js';
export { claimContextOf, ExecutionClaimer } from './claim/execution-claimer.js';
export { TurnHandover } from './claim/turn-handover.js';
export { ExecutionRunner, type RunOptions, type RunRequest } from './run/execution-runner.js';
export { type FailedAttempt, type FailureVerdict, judgeFailure } from './outcome/failure-judgement.js';
export { leasePolicy, type LeasePolicy } from './run/lease-policy.js';
export { OutboxNotifier } from './outcome/outbox-notifier.js';
export { LeaseKeeper } from './run/lease-keeper.js';
export { type Promotable, waitBeforeRetryMs, WaitingRoom, wakePassedOn } from './intake/waiting-room.js';
export { WorkerCoreModule } from './worker.module.js';
export { WorkerService } from './intake/worker.service.js';
export { createWorker, type CreateWorkerOptions, type PunctualWorker } from './create-worker.js';
export { type PunctualWorkerAsyncOptions, PunctualWorkerModule } from './punctual-worker.module.js';
export { type PunctualWorkerOptions, workerConfig } from './worker-options.js';
