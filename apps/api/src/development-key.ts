import { randomBytes } from 'node:crypto';

/**
 * An admin key for a development run without `ADMIN_API_KEY` (DESIGN §9). Its own module so that
 * `npm start` (scripts/start-all.mjs) can make one without loading the API.
 */
export function newDevelopmentKey(): string {
  return `pk_dev_${randomBytes(24).toString('base64url')}`;
}
