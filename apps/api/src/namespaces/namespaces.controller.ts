import { Controller, Param, Res } from '@nestjs/common';
import { canSeeNamespace, type Principal } from '@punctual/auth';
import {
  DEFAULT_NAMESPACE,
  durationMs,
  formatDuration,
  type Namespace as NamespaceJson,
  type NamespacePage,
  NAMESPACE_NAME_PATTERN,
  type NamespacePutBody,
  routes,
} from '@punctual/contract';
import {
  AuditRepository,
  HistoryRetention,
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
    private readonly retention: HistoryRetention,
  ) {}

  @Route(routes.listNamespaces)
  async list(
    @ValidQuery(routes.listNamespaces) query: z.output<typeof routes.listNamespaces.query>,
    @CurrentPrincipal() principal: Principal,
  ): Promise<NamespacePage> {
    const after = query.cursor ? decodeCursor<{ name: string }>(query.cursor, 'name').name : undefined;
    const items = await this.namespaces.list(principal.namespaces, { limit: query.limit, after, prefix: query.prefix });
    return {
      items: await Promise.all(items.map((n) => this.present(n))),
      nextCursor: nextCursor(items, query.limit, (n) => ({ name: n.name })),
    };
  }

  @Route(routes.getNamespace)
  async get(@Param('namespace') name: string, @CurrentPrincipal() principal: Principal): Promise<NamespaceJson> {
    const found = canSeeNamespace(principal, name) ? await this.namespaces.get(name) : null;
    if (!found) throw notFound(name);
    return this.present(found);
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
      historyRetentionMs: body.retention?.history == null ? null : durationMs(body.retention.history),
      deadLetterRetentionMs: body.retention?.deadLetters == null ? null : durationMs(body.retention.deadLetters),
    };
    await this.checkRetention(name, fields);
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
    return this.present((await this.namespaces.get(after.name))!);
  }

  /**
   * A namespace's retention must cover the `maxDelay` of each of its tasks: a slot that can still be
   * planned or claimed keeps its row (DESIGN §3). A 422 naming the task that needs longer.
   */
  private async checkRetention(name: string, fields: NamespaceFields): Promise<void> {
    const own = [fields.historyRetentionMs, fields.deadLetterRetentionMs].filter((ms): ms is number => ms !== null);
    if (own.length === 0) return;
    const longest = await this.retention.longestMaxDelay(name);
    const shortest = Math.min(...own);
    if (longest && longest.maxDelayMs > shortest) {
      const message =
        `a retention of ${formatDuration(shortest)} is shorter than the maxDelay of task "${longest.task}" ` +
        `(${formatDuration(longest.maxDelayMs)}): a slot it may still run would lose its row`;
      throw new ApiError(422, 'retention_too_short', message, [{ field: 'retention', message }]);
    }
  }

  private async present(row: NamespaceInUse): Promise<NamespaceJson> {
    const own = {
      historyMs: row.historyRetentionMs === null ? null : Number(row.historyRetentionMs),
      deadLettersMs: row.deadLetterRetentionMs === null ? null : Number(row.deadLetterRetentionMs),
    };
    return { ...present(row), retention: await this.retention.ofNamespace(row.name, own) };
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

function auditFields(
  row:
    | (Omit<NamespaceFields, 'historyRetentionMs' | 'deadLetterRetentionMs'> &
        Partial<Record<'historyRetentionMs' | 'deadLetterRetentionMs', bigint | number | null>>)
    | null,
): NamespaceFields | null {
  const ms = (v: bigint | number | null | undefined) => (v === null || v === undefined ? null : Number(v));
  return (
    row && {
      description: row.description,
      maxTasks: row.maxTasks,
      maxRunsPerMinute: row.maxRunsPerMinute,
      maxConcurrentRuns: row.maxConcurrentRuns,
      historyRetentionMs: ms(row.historyRetentionMs),
      deadLetterRetentionMs: ms(row.deadLetterRetentionMs),
    }
  );
}

function present(row: NamespaceInUse): Omit<NamespaceJson, 'retention'> {
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
