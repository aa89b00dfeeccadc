export { ClusterModule } from './cluster.module.js';
export { ClusterService } from './cluster.service.js';
export { WorkerDirectory } from './worker-directory.js';
