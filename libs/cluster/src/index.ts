/**
 * What the cluster looks like now, for operators (`ClusterService`: shard leaders, live workers,
 * queue depth, flow-control keys, clock offsets), the handlers the live workers offer, read from
 * the directory they announce themselves in (`WorkerDirectory`), and the handlers' queues
 * (`HandlerQueues`).
 *
 * @imports @punctual/contract, @punctual/db, @punctual/metrics, @punctual/queue, @punctual/redis
 * @packageDocumentation
 */
export { ClusterModule } from './cluster.module.js';
export { ClusterService } from './cluster.service.js';
export { HandlerQueues } from './handler-queues.js';
export { WorkerDirectory } from './worker-directory.js';
