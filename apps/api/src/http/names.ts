import { qualifiedName } from '@punctual/contract';
import { ApiError } from './api-error.js';

/**
 * The key of the task or calendar `name` names in `namespace` (see `qualifiedName`). A name holding
 * a `/` (an escaped one reaches a route's parameter as one) names nothing: a 404 like any unknown
 * name — never a way into another namespace.
 */
export function keyOf(namespace: string, name: string, what: 'task' | 'calendar'): string {
  if (name.includes('/')) throw new ApiError(404, 'not_found', `no ${what} named "${name}"`);
  return qualifiedName(namespace, name);
}
