#!/usr/bin/env node
// `npm start`: every role of Punctual on one machine (api, scheduler, worker), each its own
// process, sharing Postgres and Redis. Ctrl-C / SIGTERM stops all three cleanly.
// NODE_ENV defaults to development here, so a first run works without an admin key: one is
// generated, given to the API and shown in the banner printed once all three roles are up. It is
// kept in a git-ignored file (PUNCTUAL_DEV_KEY_FILE, default .punctual-dev-key) and used again by
// the next `npm start`, so the command line and a signed-in console keep working across restarts.
// PORT, SCHEDULER_PORT and WORKER_PORT move the three roles' ports (3000, 3001, 3002).
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import concurrently from 'concurrently';
import { newDevelopmentKey } from '../dist/apps/api/src/development-key.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const env = { NODE_ENV: 'development', ...process.env };
const development = env.NODE_ENV === 'development' && !env.ADMIN_API_KEY;
const keyFile = resolve(ROOT, env.PUNCTUAL_DEV_KEY_FILE || '.punctual-dev-key');
const developmentKey = development ? keptKey() : null;
if (developmentKey) env.ADMIN_API_KEY = developmentKey.key;

const portOf = (name, fallback) => {
  const value = env[name] || String(fallback);
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 65535) {
    process.stderr.write(`Invalid configuration: ${name} must be a port number from 1 to 65535 (got "${value}")\n`);
    process.exit(78);
  }
  return Number(value);
};
const port = portOf('PORT', 3000);
const roles = [
  { name: 'api', command: 'node dist/apps/api/src/main.js', env: { PORT: String(port) }, port },
  {
    name: 'scheduler',
    command: 'node dist/apps/scheduler/src/main.js',
    env: { HEALTH_PORT: String(portOf('SCHEDULER_PORT', 3001)) },
    port: portOf('SCHEDULER_PORT', 3001),
  },
  {
    name: 'worker',
    command: 'node dist/apps/worker/src/main.js',
    env: { HEALTH_PORT: String(portOf('WORKER_PORT', 3002)) },
    port: portOf('WORKER_PORT', 3002),
  },
];

/** The development key of the last run, or a new one written down (readable by this user only). */
function keptKey() {
  const kept = existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : '';
  if (/^pk_dev_[A-Za-z0-9_-]{16,}$/.test(kept)) return { key: kept, fresh: false };
  const key = newDevelopmentKey();
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  return { key, fresh: true };
}

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
  const base = `http://${env.HOST && env.HOST !== '0.0.0.0' ? env.HOST : 'localhost'}:${port}`;
  const lines = [
    '',
    'Punctual is running: api, scheduler and worker (Ctrl-C stops all three).',
    `  Console      ${base}   (sign in with the admin key below)`,
    `  API          ${base}/v1`,
    `  API docs     ${base}/docs`,
    `  Bull Board   ${base}/admin/queues`,
    developmentKey
      ? `  Admin key    ${developmentKey.key}   (${developmentKey.fresh ? 'generated' : 'kept from the last run'}, in ${keyFile}; delete the file for a new one)`
      : '  Admin key    the one in ADMIN_API_KEY',
    '',
    'For the command line (and curl) in another shell:',
    `  export PUNCTUAL_URL=${base} PUNCTUAL_API_KEY=${developmentKey ? developmentKey.key : '"$ADMIN_API_KEY"'}`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
