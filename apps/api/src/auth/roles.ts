import { createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import type { ApiKeyRole } from '@punctual/db';
import type { Request } from 'express';

export const REQUIRED_ROLE = 'punctual:role';

/** The least role a route needs. Without it: `viewer` for GET, `admin` for anything else. */
export const RequireRole = (role: ApiKeyRole) => SetMetadata(REQUIRED_ROLE, role);

export type AuthedRequest = Request & { principal?: Principal; namespace?: string };

/** The authenticated principal of the request (set by the guard). */
export const CurrentPrincipal = createParamDecorator((_: unknown, context: ExecutionContext): Principal => {
  return context.switchToHttp().getRequest<AuthedRequest>().principal!;
});

/** The namespace a route of a namespace acts in (set by the guard from `?namespace=`). */
export const CurrentNamespace = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const namespace = context.switchToHttp().getRequest<AuthedRequest>().namespace;
  if (namespace === undefined) throw new Error('CurrentNamespace on a route of the whole cluster');
  return namespace;
});
