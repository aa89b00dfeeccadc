import { randomBytes } from 'node:crypto';
import type { Config } from '@punctual/config';

/**
 * The admin key the API accepts. Outside development a missing `ADMIN_API_KEY` stops the start;
 * in development a key is generated and printed once, so a first run works without set-up.
 */
export function resolveAdminKey(config: Config): string {
  if (config.adminApiKey) return config.adminApiKey;
  if (config.nodeEnv !== 'development') {
    process.stderr.write('Invalid configuration: ADMIN_API_KEY is required unless NODE_ENV=development\n');
    process.exit(78);
  }
  const key = `pk_dev_${randomBytes(24).toString('base64url')}`;
  process.stdout.write(`\nNo ADMIN_API_KEY set (NODE_ENV=development). Generated admin key, shown once:\n\n  ${key}\n\n`);
  return key;
}
