/** Pub/sub channel (under the Redis prefix) on which the API announces task changes to the leader. */
export const TASKS_CHANGED_CHANNEL = 'tasks-changed';
