import { createHash, timingSafeEqual } from 'node:crypto';
import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { Reflector } from '@nestjs/core';
import { ApiKeysService, PUBLIC_ROUTE, roleAllows } from '@punctual/auth';
import type { ApiKeyRole } from '@punctual/db';
import { ApiError } from '../http/api-error.js';
import { AuthThrottle } from './auth-throttle.js';
import { BrowserSessionStore } from './browser-session.store.js';
import { type AuthedRequest, REQUIRED_ROLE } from './roles.js';

/**
 * `Authorization: Bearer <key>` on every route not marked `@Public()`, and the route's role:
 * viewer < operator < admin. Repeated failures from one address are throttled. The console calls
 * with its session cookie instead, and only together with its header (`CONSOLE_HEADER`).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly throttle = new AuthThrottle();

  private readonly metricsToken: string | undefined;

  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
    private readonly sessions: BrowserSessionStore,
    @Inject(CONFIG) config: Config,
  ) {
    this.metricsToken = config.metricsToken;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    const client = req.ip ?? 'unknown';
    if (this.throttle.blocked(client))
      throw new ApiError(429, 'too_many_failures', 'too many failed authentications; try again later');
    const match = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (match && req.path === '/metrics' && this.metricsToken && sameSecret(match[1]!, this.metricsToken)) return true;
    const principal = match ? await this.keys.authenticate(match[1]!) : await this.sessions.consoleCallPrincipal(req);
    if (!principal) {
      // Only a wrong key counts: throttling is against guessing, not against a forgotten header.
      if (match) this.throttle.fail(client);
      throw new ApiError(
        401,
        'unauthenticated',
        match ? 'the API key is not valid' : 'send Authorization: Bearer <api key>',
      );
    }
    const required =
      this.reflector.getAllAndOverride<ApiKeyRole>(REQUIRED_ROLE, targets) ??
      (req.method === 'GET' ? 'viewer' : 'admin');
    if (!roleAllows(principal.role, required)) {
      throw new ApiError(403, 'forbidden', `this route needs the ${required} role; the key has ${principal.role}`);
    }
    req.principal = principal;
    return true;
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest();
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}
