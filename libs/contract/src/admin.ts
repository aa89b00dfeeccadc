import { z } from 'zod';
import { Page, PageQuery, Timestamp } from './common.js';
import { PENDING_EXECUTION_STATUSES, Role } from './enums.js';
import { API_KEY_NAME_PATTERN } from './limits.js';
import { NamespaceName } from './namespace.js';

const KeyNamespaces = z
  .array(NamespaceName)
  .min(1)
  .max(100)
  .nullable()
  .meta({
    description:
      'the namespaces the key may see (outside them everything is a 404); null or left out: the whole cluster',
    examples: [['team-a']],
  });

export const CreateApiKeyBody = z
  .strictObject({
    name: z
      .string()
      .regex(API_KEY_NAME_PATTERN, `must match ${API_KEY_NAME_PATTERN.source}`)
      .meta({ examples: ['ci-deployer'] }),
    role: Role.meta({ examples: ['operator'] }),
    namespaces: KeyNamespaces.optional(),
  })
  .meta({ id: 'CreateApiKeyBody' });

/** An API key as listed: never the key itself. */
export const ApiKey = z
  .object({
    id: z.uuid(),
    name: z.string(),
    prefix: z.string(),
    role: Role,
    namespaces: z.array(z.string()).nullable().meta({ description: 'null: the whole cluster' }),
    createdAt: Timestamp,
    lastUsedAt: Timestamp.nullable(),
    revokedAt: Timestamp.nullable(),
  })
  .meta({ id: 'ApiKey' });
/** The answer to creating a key: the key itself, shown this once. */
export const CreatedApiKey = ApiKey.extend({ key: z.string() }).meta({ id: 'CreatedApiKey' });
export const ApiKeyList = z.object({ items: z.array(ApiKey) }).meta({ id: 'ApiKeyList' });

/** One admin change: who did what to which target, before and after. */
export const AuditEntry = z
  .object({
    id: z.string(),
    actor: z.string(),
    action: z.string(),
    target: z.string(),
    namespace: z
      .string()
      .nullable()
      .meta({ description: "the target's namespace (a task's, a calendar's); null: the cluster's (keys, namespaces)" }),
    before: z.unknown(),
    after: z.unknown(),
    at: Timestamp,
  })
  .meta({ id: 'AuditEntry' });
export const AuditPage = Page(AuditEntry).meta({ id: 'AuditPage' });
export const AuditQuery = PageQuery.extend({
  actor: z.string().max(128).optional(),
  action: z.string().max(128).optional(),
  target: z.string().max(256).optional(),
});

/** Who the caller is (`GET /v1/me`): the key's name for the audit log and its role. */
export const Me = z
  .object({
    actor: z.string(),
    role: Role,
    namespaces: z.array(z.string()).nullable().meta({ description: 'the namespaces the key may see; null: all' }),
  })
  .meta({ id: 'Me' });

export const HandlerList = z
  .object({ items: z.array(z.object({ name: z.string(), workers: z.number().int() })) })
  .meta({ id: 'HandlerList' });

/** What the cluster looks like now (`GET /v1/cluster`). */
export const Cluster = z
  .object({
    leader: z
      .object({
        instance: z
          .string()
          .nullable()
          .meta({ description: 'the scheduler instance holding the leader lock (null: none)' }),
        epoch: z.number().int().meta({ description: 'the fencing epoch of the latest leader' }),
        acquiredAt: Timestamp.nullable(),
        heartbeatAt: Timestamp.nullable(),
      })
      .meta({ description: "shard 0's leader (an unsharded cluster's only one), from scheduler_state" }),
    shards: z
      .array(
        z.object({
          shard: z.number().int(),
          leader: z
            .string()
            .nullable()
            .meta({ description: 'the scheduler instance that took the latest epoch of this shard (null: none yet)' }),
          epoch: z.number().int().meta({ description: "the fencing epoch of the shard's latest leader" }),
          acquiredAt: Timestamp.nullable(),
          heartbeatAt: Timestamp.nullable(),
        }),
      )
      .meta({
        description:
          'every shard (SCHEDULER_SHARDS; one in an unsharded cluster) with its leader, from scheduler_state',
      }),
    workers: z.array(
      z.object({
        instance: z.string(),
        handlers: z.array(z.string()),
        concurrency: z.number().int().nullable(),
        seenAt: Timestamp.nullable(),
      }),
    ),
    waitingForWorker: z
      .array(
        z.object({
          handler: z.string(),
          runs: z.number().int().meta({ description: 'runs due now, not started, of this handler' }),
          since: Timestamp.meta({ description: 'when the oldest of them came due' }),
        }),
      )
      .meta({
        description:
          'handlers that due runs wait for and that no live worker offers: each such run waits (its misfire policy decides it past maxDelay) until a worker offering the handler is back',
      }),
    queue: z.object({
      jobs: z
        .record(z.string(), z.number().int())
        .meta({ description: 'BullMQ job counts by state (waiting, active, delayed, …)' }),
      executions: z.object(
        Object.fromEntries(PENDING_EXECUTION_STATUSES.map((s) => [s, z.number().int()])) as Record<
          (typeof PENDING_EXECUTION_STATUSES)[number],
          z.ZodNumber
        >,
      ),
    }),
    flow: z
      .array(
        z.object({
          key: z.string(),
          running: z.number().int().meta({ description: 'runs of the key in progress (under a live lease)' }),
          waiting: z.number().int().meta({ description: 'runs held back on the key' }),
        }),
      )
      .meta({ description: 'the busiest flow-control keys (at most 20): most waiting first, then most running' }),
    clockOffsets: z.array(
      z.object({
        role: z.string(),
        instance: z.string(),
        offsetMs: z.number().meta({ description: "this process's clock minus Postgres' clock" }),
        measuredAt: Timestamp,
      }),
    ),
    retention: z
      .object({
        history: z.string().meta({ description: 'HISTORY_RETENTION in force (a namespace may keep its own)' }),
        deadLetters: z.string().meta({ description: 'DEAD_LETTER_RETENTION in force (a namespace may keep its own)' }),
        audit: z.string().meta({ description: 'AUDIT_RETENTION' }),
        oldestSlot: Timestamp.nullable().meta({
          description: 'the oldest slot the history still holds (the start of its oldest partition); null: none',
        }),
        liveFrom: Timestamp.nullable().meta({
          description:
            'the live horizon: no execution that can still change has an older slot (null: from the beginning)',
        }),
        partitions: z.number().int().meta({ description: 'partitions of task_execution' }),
        namespaces: z
          .array(z.object({ namespace: z.string(), history: z.string(), deadLetters: z.string() }))
          .meta({ description: 'the namespaces that keep their history for another time, and for how long' }),
      })
      .meta({ description: 'how long the history is kept (DESIGN §3 "History lifecycle")' }),
  })
  .meta({ id: 'Cluster' });

export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;
export type ApiKey = z.infer<typeof ApiKey>;
export type CreatedApiKey = z.infer<typeof CreatedApiKey>;
export type AuditEntry = z.infer<typeof AuditEntry>;
export type AuditQuery = z.input<typeof AuditQuery>;
export type HandlerList = z.infer<typeof HandlerList>;
export type Me = z.infer<typeof Me>;
export type Cluster = z.infer<typeof Cluster>;
export type ClockOffset = Cluster['clockOffsets'][number];
export type WorkerEntry = Cluster['workers'][number];
