import { Controller, Param, ParseUUIDPipe } from '@nestjs/common';
import { ApiKeysService, type Principal, scopeOf } from '@punctual/auth';
import { ClusterService } from '@punctual/cluster';
import {
  type ApiKey as ApiKeyJson,
  type Cluster,
  type CreateApiKeyBody,
  type CreatedApiKey,
  bareName,
  type Me,
  qualifiedName,
  routes,
} from '@punctual/contract';
import { type ApiKey, AuditRepository, NamespacesRepository } from '@punctual/db';
import { decodeCursor, InvalidCursorError, nextCursor, withBareNames } from '@punctual/tasks';
import type { z } from 'zod';
import { CurrentNamespace, CurrentPrincipal } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { Route, ValidBody, ValidQuery } from '../http/route.decorator.js';

const presentKey = (k: ApiKey): ApiKeyJson => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  role: k.role,
  namespaces: scopeOf(k),
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
  revokedAt: k.revokedAt?.toISOString() ?? null,
});

@Controller()
export class ApiKeysController {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly audit: AuditRepository,
    private readonly namespaces: NamespacesRepository,
  ) {}

  @Route(routes.createApiKey)
  async create(
    @ValidBody(routes.createApiKey) body: CreateApiKeyBody,
    @CurrentPrincipal() actor: Principal,
  ): Promise<CreatedApiKey> {
    const scope = body.namespaces ?? null;
    const missing = scope && (await Promise.all(scope.map((n) => this.namespaces.exists(n)))).indexOf(false);
    if (scope && missing !== null && missing >= 0) {
      const message = `namespaces[${missing}]: no namespace named "${scope[missing]}"`;
      throw new ApiError(422, 'validation_failed', message, [{ field: `namespaces[${missing}]`, message }]);
    }
    const { key, record } = await this.keys.create(body.name, body.role, scope);
    await this.audit.record({
      actor: actor.actor,
      action: 'api_key.create',
      target: record.prefix,
      after: presentKey(record),
    });
    return { ...presentKey(record), key };
  }

  @Route(routes.getMe)
  me(@CurrentPrincipal() principal: Principal): Me {
    return {
      actor: principal.actor,
      role: principal.role,
      namespaces: principal.namespaces && [...principal.namespaces],
    };
  }

  @Route(routes.listApiKeys)
  async list() {
    return { items: (await this.keys.list()).map(presentKey) };
  }

  @Route(routes.revokeApiKey)
  async revoke(
    @Param(
      'id',
      new ParseUUIDPipe({ exceptionFactory: () => new ApiError(404, 'not_found', 'no API key with that id') }),
    )
    id: string,
    @CurrentPrincipal() actor: Principal,
  ) {
    const revoked = await this.keys.revoke(id);
    if (!revoked) throw new ApiError(404, 'not_found', 'no active API key with that id');
    await this.audit.record({
      actor: actor.actor,
      action: 'api_key.revoke',
      target: revoked.prefix,
      after: presentKey(revoked),
    });
  }
}

@Controller()
export class AuditController {
  constructor(private readonly audit: AuditRepository) {}

  @Route(routes.listAudit)
  async list(
    @ValidQuery(routes.listAudit) query: z.output<typeof routes.listAudit.query>,
    @CurrentNamespace() namespace: string,
    @CurrentPrincipal() principal: Principal,
  ) {
    const before = query.cursor ? auditCursor(query.cursor) : undefined;
    const filter = {
      actor: query.actor,
      action: query.action,
      target: query.target && qualifiedName(namespace, query.target),
      namespace,
      // Entries about the cluster itself (keys, namespaces) are for a key of the whole cluster only.
      withCluster: principal.namespaces === null,
    };
    const items = await this.audit.list(filter, query.limit, before);
    return {
      items: items.map((a) => ({
        id: a.id.toString(),
        actor: a.actor,
        action: a.action,
        target: a.namespace ? bareName(a.target) : a.target,
        namespace: a.namespace,
        before: a.namespace ? shownState(a.before) : a.before,
        after: a.namespace ? shownState(a.after) : a.after,
        at: a.at.toISOString(),
      })),
      nextCursor: nextCursor(items, query.limit, (a) => ({ id: a.id.toString() })),
    };
  }
}

function auditCursor(cursor: string): bigint {
  const { id } = decodeCursor<{ id: string }>(cursor, 'id');
  if (!/^\d{1,18}$/.test(id)) throw new InvalidCursorError();
  return BigInt(id);
}

@Controller()
export class HandlersController {
  constructor(private readonly cluster: ClusterService) {}

  @Route(routes.listHandlers)
  async list(@CurrentPrincipal() principal: Principal) {
    return { items: await this.cluster.handlers(principal.namespaces) };
  }
}

@Controller()
export class ClusterController {
  constructor(private readonly cluster: ClusterService) {}

  @Route(routes.getCluster)
  async get(@CurrentPrincipal() principal: Principal): Promise<Cluster> {
    const snapshot = await this.cluster.snapshot(principal.namespaces);
    // Flow-control keys are the tasks' own words: a scoped key sees the cluster's figures only.
    return principal.namespaces === null ? snapshot : { ...snapshot, flow: [] };
  }
}

/** An audit entry's before or after: a stored definition (see `withBareNames`), or nothing. */
function shownState(state: unknown): unknown {
  const named = typeof state === 'object' && state !== null && typeof (state as { name?: unknown }).name === 'string';
  return named ? withBareNames(state as { name: string }) : state;
}
