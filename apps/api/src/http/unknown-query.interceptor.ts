import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { RouteDef } from '@punctual/contract';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { ApiError } from './api-error.js';
import { CONTRACT_ROUTE } from './route.decorator.js';

/**
 * A route whose contract reads no query string refuses one (400 naming each parameter): a flag it
 * does not know — `?dryRun=true` on a route with no dry run — must never be ignored while the
 * request does what it would do without it. Routes that read a query refuse unknown parameters
 * through their strict schema. `namespace` is a parameter of every route of a namespace.
 */
@Injectable()
export class UnknownQueryInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const route = this.reflector.get<RouteDef | undefined>(CONTRACT_ROUTE, context.getHandler());
    const query = context.switchToHttp().getRequest<Request>().query;
    // A route of a namespace reads `namespace` whatever else it reads (the guard does).
    const names = Object.keys(query ?? {}).filter((name) => route?.cluster || name !== 'namespace');
    if (route && !route.query && names.length > 0) {
      const details = names.map((name) => ({
        field: name,
        message: `${name} is not a query parameter of ${route.method} ${route.path}`,
      }));
      throw new ApiError(400, 'invalid_request', details.map((d) => d.message).join('; '), details);
    }
    return next.handle();
  }
}
