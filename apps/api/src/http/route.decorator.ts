import { applyDecorators, Body, HttpCode, Query, RequestMapping, RequestMethod, SetMetadata } from '@nestjs/common';
import type { RouteDef } from '@punctual/contract';
import { REQUIRED_ROLE } from '../auth/roles.js';
import { ZodValidationPipe } from './zod-validation.js';

export const CONTRACT_ROUTE = 'punctual:route';

/** `/v1/tasks/{name}` → `/v1/tasks/:name`; a literal colon (`/v1/tasks:batch`) is escaped. */
export function expressPath(path: string): string {
  return path.replace(/:/g, '\\:').replace(/\{(\w+)\}/g, ':$1');
}

/** Serves a contract route: its method and path, success status and the role it needs. */
export function Route(route: RouteDef): MethodDecorator {
  return applyDecorators(
    RequestMapping({ path: expressPath(route.path), method: RequestMethod[route.method] }),
    HttpCode(route.status),
    SetMetadata(REQUIRED_ROLE, route.role),
    SetMetadata(CONTRACT_ROUTE, route),
  );
}

/** The request body, parsed by the route's schema. */
export const ValidBody = (route: RouteDef): ParameterDecorator => Body(new ZodValidationPipe(route.body!));

/**
 * The query string, parsed by the route's schema; `namespace`, which every route of a namespace
 * takes and the guard reads, is left out (see `CurrentNamespace`).
 */
export const ValidQuery = (route: RouteDef): ParameterDecorator =>
  Query(new ZodValidationPipe(route.query!, route.cluster ? [] : ['namespace']));
