#!/usr/bin/env node
// `npm start`: every role of Punctual on one machine (api, scheduler, worker), each its own
// process, sharing Postgres and Redis. Ctrl-C / SIGTERM stops all three cleanly.
// NODE_ENV defaults to development here, so a first run works without an admin key.
import concurrently from 'concurrently';

const env = { NODE_ENV: 'development', ...process.env };
const roles = [
  { name: 'api', command: 'node dist/apps/api/src/main.js', env: {} },
  { name: 'scheduler', command: 'node dist/apps/scheduler/src/main.js', env: { HEALTH_PORT: '3001' } },
  { name: 'worker', command: 'node dist/apps/worker/src/main.js', env: { HEALTH_PORT: '3002' } },
];

const { result } = concurrently(
  roles.map((role) => ({ name: role.name, command: role.command, env: { ...env, ...role.env } })),
  { prefix: 'name', killOthersOn: ['failure'], killSignal: 'SIGTERM', prefixColors: ['cyan', 'magenta', 'yellow'] },
);
result.then(
  () => process.exit(0),
  (events) => process.exit(events.some((e) => e.exitCode !== 0 && e.exitCode !== 'SIGTERM' && e.exitCode !== 'SIGINT') ? 1 : 0),
);
