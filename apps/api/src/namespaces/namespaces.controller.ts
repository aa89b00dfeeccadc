import { Controller, Param, Res } from '@nestjs/common';
import { canSeeNamespace, type Principal } from '@punctual/auth';
import {
  DEFAULT_NAMESPACE,
  type Namespace as NamespaceJson,
  type NamespacePage,
  NAMESPACE_NAME_PATTERN,
  type NamespacePutBody,
  routes,
} from '@punctual/contract';
import {
  AuditRepository,
  type NamespaceFields,
  type NamespaceInUse,
  NamespacesRepository,
  PrismaService,
} from '@punctual/db';
import { quotaFlowKey } from '@punctual/planning';
import { announceFlowKey } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { decodeCursor, nextCursor } from '@punctual/tasks';
import type { Response } from 'express';
import type { z } from 'zod';
import { CurrentPrincipal } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { Route, ValidBody, ValidQuery } from '../http/route.decorator.js';

/**
 * Namespaces (DESIGN §7, wave 4): their description and quotas. Any key lists and reads the ones it
 * may see (another is a 404, as one that does not exist); only an admin key of the whole cluster
 * creates, changes or deletes one.
 */
@Controller()
export class NamespacesController {
  constructor(
    private readonly namespaces: NamespacesRepository,
    private readonly audit: AuditRepository,
    private readonly prisma: PrismaService,
    private readonly redis: RedisService,
  ) {}

  @Route(routes.listNamespaces)
  async list(
    @ValidQuery(routes.listNamespaces) query: z.output<typeof routes.listNamespaces.query>,
    @CurrentPrincipal() principal: Principal,
  ): Promise<NamespacePage> {
    const after = query.cursor ? decodeCursor<{ name: string }>(query.cursor, 'name').name : undefined;
    const items = await this.namespaces.list(principal.namespaces, { limit: query.limit, after, prefix: query.prefix });
    return { items: items.map(present), nextCursor: nextCursor(items, query.limit, (n) => ({ name: n.name })) };
  }

  @Route(routes.getNamespace)
  async get(@Param('namespace') name: string, @CurrentPrincipal() principal: Principal): Promise<NamespaceJson> {
    const found = canSeeNamespace(principal, name) ? await this.namespaces.get(name) : null;
    if (!found) throw notFound(name);
    return present(found);
  }

  @Route(routes.putNamespace)
  async put(
    @Param('namespace') name: string,
    @ValidBody(routes.putNamespace) body: NamespacePutBody,
    @CurrentPrincipal() actor: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<NamespaceJson> {
    checkName(name);
    const fields: NamespaceFields = {
      description: body.description ?? null,
      maxTasks: body.quotas?.maxTasks ?? null,
      maxRunsPerMinute: body.quotas?.maxRunsPerMinute ?? null,
      maxConcurrentRuns: body.quotas?.maxConcurrentRuns ?? null,
    };
    const { before, after } = await this.prisma.$transaction(async (tx) => {
      const written = await this.namespaces.put(name, fields, tx);
      await this.audit.record(
        {
          actor: actor.actor,
          action: 'namespace.put',
          target: name,
          before: auditFields(written.before),
          after: fields,
        },
        tx,
      );
      return written;
    });
    res.status(before ? 200 : 201);
    // Runs held on the run quotas wait for a run of the namespace to end; a quota raised or lifted
    // frees them now: the first held is woken, and each that starts with room left wakes the next.
    if (before && (before.maxConcurrentRuns !== null || before.maxRunsPerMinute !== null))
      await announceFlowKey(this.redis, quotaFlowKey(name)); // not heard: the held runs ask again on their own
    return present((await this.namespaces.get(after.name))!);
  }

  @Route(routes.deleteNamespace)
  async remove(@Param('namespace') name: string, @CurrentPrincipal() actor: Principal): Promise<void> {
    checkName(name);
    if (name === DEFAULT_NAMESPACE)
      throw new ApiError(
        409,
        'namespace_in_use',
        'the default namespace cannot be deleted: it is every request’s default',
      );
    await this.prisma.$transaction(async (tx) => {
      const result = await this.namespaces.delete(name, tx);
      if (!result) throw notFound(name);
      if (!('deleted' in result))
        throw new ApiError(
          409,
          'namespace_in_use',
          `namespace "${name}" holds ${result.tasks} task(s) and ${result.calendars} calendar(s): delete them first`,
          [{ field: 'namespace', message: `${result.tasks} task(s), ${result.calendars} calendar(s)` }],
        );
      await this.audit.record(
        {
          actor: actor.actor,
          action: 'namespace.delete',
          target: name,
          before: auditFields(result.deleted),
          after: null,
        },
        tx,
      );
    });
  }
}

function checkName(name: string): void {
  if (!NAMESPACE_NAME_PATTERN.test(name)) {
    const message = `namespace must match ${NAMESPACE_NAME_PATTERN.source}`;
    throw new ApiError(422, 'validation_failed', message, [{ field: 'namespace', message }]);
  }
}

const notFound = (name: string) => new ApiError(404, 'not_found', `no namespace named "${name}"`);

function auditFields(row: NamespaceFields | null): NamespaceFields | null {
  return (
    row && {
      description: row.description,
      maxTasks: row.maxTasks,
      maxRunsPerMinute: row.maxRunsPerMinute,
      maxConcurrentRuns: row.maxConcurrentRuns,
    }
  );
}

function present(row: NamespaceInUse): NamespaceJson {
  return {
    name: row.name,
    description: row.description,
    quotas: {
      maxTasks: row.maxTasks,
      maxRunsPerMinute: row.maxRunsPerMinute,
      maxConcurrentRuns: row.maxConcurrentRuns,
    },
    use: {
      maxTasks: { used: row.tasks, limit: row.maxTasks },
      maxRunsPerMinute: { used: row.startsInMinute, limit: row.maxRunsPerMinute },
      maxConcurrentRuns: { used: row.running, limit: row.maxConcurrentRuns },
    },
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
