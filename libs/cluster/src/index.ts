/**
 * What the cluster looks like now, for operators (`ClusterService`: shard leaders, live workers,
 * queue depth, flow-control keys, clock offsets), and the directory in which workers announce
 * their handlers (`WorkerDirectory`).
 *
 * @imports @punctual/contract, @punctual/db, @punctual/queue, @punctual/redis
 * @packageDocumentation
 */
export { ClusterModule } from './cluster.module.js';
export { ClusterService } from './cluster.service.js';
export { ANNOUNCE_MS, WorkerDirectory } from './worker-directory.js';
