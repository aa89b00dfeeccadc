import { Controller, Param, ParseUUIDPipe } from '@nestjs/common';
import { ApiKeysService, type Principal } from '@punctual/auth';
import { ClusterService, WorkerDirectory } from '@punctual/cluster';
import {
  type ApiKey as ApiKeyJson,
  type Cluster,
  type CreateApiKeyBody,
  type CreatedApiKey,
  type Me,
  routes,
} from '@punctual/contract';
import { type ApiKey, AuditRepository } from '@punctual/db';
import { decodeCursor, InvalidCursorError, nextCursor } from '@punctual/tasks';
import type { z } from 'zod';
import { CurrentPrincipal } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { Route, ValidBody, ValidQuery } from '../http/route.decorator.js';

const presentKey = (k: ApiKey): ApiKeyJson => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  role: k.role,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
  revokedAt: k.revokedAt?.toISOString() ?? null,
});

@Controller()
export class ApiKeysController {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly audit: AuditRepository,
  ) {}

  @Route(routes.createApiKey)
  async create(
    @ValidBody(routes.createApiKey) body: CreateApiKeyBody,
    @CurrentPrincipal() actor: Principal,
  ): Promise<CreatedApiKey> {
    const { key, record } = await this.keys.create(body.name, body.role);
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
    return { actor: principal.actor, role: principal.role };
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
  async list(@ValidQuery(routes.listAudit) query: z.output<typeof routes.listAudit.query>) {
    const before = query.cursor ? auditCursor(query.cursor) : undefined;
    const items = await this.audit.list(
      { actor: query.actor, action: query.action, target: query.target },
      query.limit,
      before,
    );
    return {
      items: items.map((a) => ({
        id: a.id.toString(),
        actor: a.actor,
        action: a.action,
        target: a.target,
        before: a.before,
        after: a.after,
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
  constructor(private readonly directory: WorkerDirectory) {}

  @Route(routes.listHandlers)
  async list() {
    return { items: await this.directory.handlers() };
  }
}

@Controller()
export class ClusterController {
  constructor(private readonly cluster: ClusterService) {}

  @Route(routes.getCluster)
  get(): Promise<Cluster> {
    return this.cluster.snapshot();
  }
}
