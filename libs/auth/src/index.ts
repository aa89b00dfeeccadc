/**
 * API keys and who may do what: keys checked in constant time against their stored hash
 * (`ApiKeysService`), the role order viewer < operator < admin (`roleAllows`), and `@Public()`,
 * the mark of a route that needs no key (health probes, scrapes).
 *
 * @imports @punctual/config, @punctual/db
 * @packageDocumentation
 */
export { ApiKeysService, canSeeNamespace, type Principal, roleAllows, scopeOf } from './api-keys.service.js';
export { AuthModule } from './auth.module.js';
export { Public, PUBLIC_ROUTE } from './public.decorator.js';
