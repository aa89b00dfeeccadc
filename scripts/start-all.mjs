#!/usr/bin/env node
// `npm start`: every role of Punctual on one machine (api, scheduler, worker), each its own
// process, sharing Postgres and Redis. Ctrl-C / SIGTERM stops all three cleanly.
// NODE_ENV defaults to development here, so a first run works without an admin key: one is
// generated, given to the API and shown in the banner printed once all three roles are up.
import concurrently from 'concurrently';
import { newDevelopmentKey } from '../dist/apps/api/src/development-key.js';

const env = { NODE_ENV: 'development', ...process.env };
const generatedKey = env.NODE_ENV === 'development' && !env.ADMIN_API_KEY ? newDevelopmentKey() : null;
if (generatedKey) env.ADMIN_API_KEY = generatedKey;
const port = Number(env.PORT || 3000);
const roles = [
  { name: 'api', command: 'node dist/apps/api/src/main.js', env: {}, port },
  { name: 'scheduler', command: 'node dist/apps/scheduler/src/main.js', env: { HEALTH_PORT: '3001' }, port: 3001 },
  { name: 'worker', command: 'node dist/apps/worker/src/main.js', env: { HEALTH_PORT: '3002' }, port: 3002 },
];

const { result } = concurrently(
  roles.map((role) => ({ name: role.name, command: role.command, env: { ...env, ...role.env } })),
  { prefix: 'name', killOthersOn: ['failure'], killSignal: 'SIGTERM', prefixColors: ['cyan', 'magenta', 'yellow'] },
);
let ended = false;
result.then(
  () => process.exit(0),
  (events) => {
    ended = true;
    process.exit(events.some((e) => e.exitCode !== 0 && e.exitCode !== 'SIGTERM' && e.exitCode !== 'SIGINT') ? 1 : 0);
  },
);

/** Resolves once every role answers /health/live (false if one stopped first). */
async function allLive() {
  const live = async (p) => (await fetch(`http://127.0.0.1:${p}/health/live`).catch(() => null))?.ok === true;
  while (!ended) {
    if ((await Promise.all(roles.map((role) => live(role.port)))).every(Boolean)) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

if (await allLive()) {
  const base = `http://localhost:${port}`;
  const lines = [
    '',
    'Punctual is running: api, scheduler and worker (Ctrl-C stops all three).',
    `  Console      ${base}   (sign in with the admin key below)`,
    `  API          ${base}/v1`,
    `  API docs     ${base}/docs`,
    `  Bull Board   ${base}/admin/queues`,
    generatedKey
      ? `  Admin key    ${generatedKey}   (generated for this run and shown once; set ADMIN_API_KEY to keep one)`
      : '  Admin key    the one in ADMIN_API_KEY',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
