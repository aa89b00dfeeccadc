import { createHash, timingSafeEqual } from 'node:crypto';
import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { Reflector } from '@nestjs/core';
import { ApiKeysService, canSeeNamespace, type Principal, PUBLIC_ROUTE, roleAllows } from '@punctual/auth';
import { DEFAULT_NAMESPACE, NAMESPACE_NAME_PATTERN, type RouteDef } from '@punctual/contract';
import { type ApiKeyRole, NamespacesRepository } from '@punctual/db';
import { ApiError } from '../http/api-error.js';
import { CONTRACT_ROUTE } from '../http/route.decorator.js';
import { AuthThrottle } from './auth-throttle.js';
import { BrowserSessionStore } from './browser-session.store.js';
import { type AuthedRequest, REQUIRED_ROLE } from './roles.js';

/**
 * `Authorization: Bearer <key>` on every route not marked `@Public()`, and the route's role:
 * viewer < operator < admin. Repeated failures from one address are throttled. The console calls
 * with its session cookie instead, and only together with its header (`CONSOLE_HEADER`).
 *
 * Then the namespace: a route of a namespace acts in the one `?namespace=` names (default
 * `default`), set on the request for the controller. A namespace the key may not see is a 404, word
 * for word the answer for one that does not exist, so a scoped key learns nothing of the others. A
 * route of the whole cluster (`cluster: 'whole'`), and any route outside the contract (`/metrics`,
 * whose series name tasks of every namespace), needs a key of the whole cluster.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly throttle = new AuthThrottle();

  private readonly metricsToken: string | undefined;

  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
    private readonly sessions: BrowserSessionStore,
    private readonly namespaces: NamespacesRepository,
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
    const route = this.reflector.get<RouteDef | undefined>(CONTRACT_ROUTE, context.getHandler());
    if ((!route || route.cluster === 'whole') && principal.namespaces !== null)
      throw new ApiError(
        403,
        'forbidden',
        `this route needs a key of the whole cluster; the key may see only ${principal.namespaces.join(', ')}`,
      );
    // The namespace before the role: outside its namespaces a key meets the same 404 whatever it asks.
    if (route && !route.cluster) req.namespace = await this.namespaceOf(req, principal);
    const required =
      this.reflector.getAllAndOverride<ApiKeyRole>(REQUIRED_ROLE, targets) ??
      (req.method === 'GET' ? 'viewer' : 'admin');
    if (!roleAllows(principal.role, required)) {
      throw new ApiError(403, 'forbidden', `this route needs the ${required} role; the key has ${principal.role}`);
    }
    req.principal = principal;
    return true;
  }

  /** The namespace a request acts in: `?namespace=`, `default` when it names none. */
  private async namespaceOf(req: AuthedRequest, principal: Principal): Promise<string> {
    const asked = req.query.namespace ?? DEFAULT_NAMESPACE;
    if (typeof asked !== 'string' || !NAMESPACE_NAME_PATTERN.test(asked)) {
      const message = `namespace must match ${NAMESPACE_NAME_PATTERN.source}`;
      throw new ApiError(422, 'validation_failed', message, [{ field: 'namespace', message }]);
    }
    const visible =
      canSeeNamespace(principal, asked) && (asked === DEFAULT_NAMESPACE || (await this.namespaces.exists(asked)));
    if (!visible) {
      const scope = principal.namespaces ? `; this key may see ${principal.namespaces.join(', ')}` : '';
      throw new ApiError(404, 'not_found', `no namespace named "${asked}"${scope}`);
    }
    return asked;
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest();
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}
