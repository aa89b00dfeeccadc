import { createHash, timingSafeEqual } from 'node:crypto';
import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { PUBLIC_ROUTE } from '@punctual/observability';
import type { Request } from 'express';
import { ApiError } from '../http/api-error.js';

/** Injection token of the admin key this process accepts. */
export const ADMIN_KEY = Symbol('punctual.admin-key');

const digest = (value: string) => createHash('sha256').update(value).digest();

/** `Authorization: Bearer <key>` on every route not marked `@Public()`; compared in constant time. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly expected: Buffer;

  constructor(
    private readonly reflector: Reflector,
    @Inject(ADMIN_KEY) adminKey: string,
  ) {
    this.expected = digest(adminKey);
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()])) return true;
    const header = context.switchToHttp().getRequest<Request>().headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new ApiError(401, 'unauthenticated', 'send Authorization: Bearer <api key>');
    if (!timingSafeEqual(digest(match[1]!), this.expected)) throw new ApiError(401, 'unauthenticated', 'the API key is not valid');
    return true;
  }
}
