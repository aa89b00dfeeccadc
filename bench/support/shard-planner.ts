import { createInterface } from 'node:readline';
import { loadConfig } from '../../libs/config/src/index.js';
import { InProcessScheduler } from './punctual.js';

/**
 * A planning process of the shards bench: `node shard-planner.js <count> <shard,shard> <nowMs>`
 * with the sandbox's environment. Takes its shards' epochs, prints `ready`, waits for a line on
 * stdin, plans every due slot of its shards (the shards side by side), then prints
 * `{ slots, seconds, cpuMs }` as JSON and exits.
 */
const [count, list, nowMs] = process.argv.slice(2);
const scheduler = await InProcessScheduler.open(loadConfig({ ...process.env, LOG_LEVEL: 'warn' }));
const fences = await scheduler.leadShards(Number(count), list!.split(',').map(Number));
console.log('ready');
await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()));
const result = await scheduler.planShards(fences, new Date(Number(nowMs)));
console.log(JSON.stringify(result));
await scheduler.close();
process.exit(0);
