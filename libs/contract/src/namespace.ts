import { z } from 'zod';
import { DURATION_MESSAGE, durationMs, Page, PageQuery, Timestamp } from './common.js';
import { DEFAULT_NAMESPACE, NAMESPACE_NAME_PATTERN, QUOTA_CAPS, RETENTION_MAX_MS, RETENTION_MIN_MS } from './limits.js';

/**
 * A task's or a calendar's key in the cluster: its name in the default namespace,
 * `<namespace>/<name>` in any other. A name never holds `/`, so keys of two namespaces never meet.
 * Rows, metrics and logs carry the key; the API shows the name and the namespace apart.
 */
export function qualifiedName(namespace: string, name: string): string {
  if (namespace.includes('/')) throw new TypeError(`a namespace holds no "/": "${namespace}"`);
  return namespace === DEFAULT_NAMESPACE ? name : `${namespace}/${name}`;
}

/** The namespace and the name a key ({@link qualifiedName}) stands for. */
export function splitQualifiedName(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: DEFAULT_NAMESPACE, name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The name a key stands for, without its namespace. */
export const bareName = (key: string): string => splitQualifiedName(key).name;

export const NamespaceName = z
  .string()
  .regex(NAMESPACE_NAME_PATTERN, `must match ${NAMESPACE_NAME_PATTERN.source}`)
  .meta({ description: 'a namespace: lower-case letters, digits and -, 1–63 characters', examples: ['team-a'] });

const quota = (cap: number, description: string) =>
  z
    .number()
    .int()
    .min(0)
    .max(cap)
    .nullable()
    .optional()
    .meta({ description: `${description}; null or left out: no limit` });

/** A namespace's limits. */
export const NamespaceQuotas = z
  .strictObject({
    maxTasks: quota(QUOTA_CAPS.maxTasks, 'tasks the namespace may hold: creating one more is a 429 `quota_exceeded`'),
    maxRunsPerMinute: quota(
      QUOTA_CAPS.maxRunsPerMinute,
      'starts of its runs in any minute, across every worker: a run over it waits (held, in `fire_at` order), it does not fail',
    ),
    maxConcurrentRuns: quota(
      QUOTA_CAPS.maxConcurrentRuns,
      'its runs at once, across every worker: a run over it waits for one to end (held, in `fire_at` order)',
    ),
  })
  .meta({ id: 'NamespaceQuotas' });

/** A retention of history: a duration (`"30d"`, `"12h"`, or whole milliseconds) from an hour to a hundred years. */
export const RetentionDuration = z
  .union([z.string().max(32), z.number().int().nonnegative()])
  .refine((value) => !Number.isNaN(durationMs(value)), DURATION_MESSAGE)
  .refine(
    (value) => !(durationMs(value) < RETENTION_MIN_MS),
    'must be at least 1h: a slot that can still be planned keeps its row',
  )
  .refine((value) => !(durationMs(value) > RETENTION_MAX_MS), 'must be at most 36500d')
  .meta({ description: 'a retention: "30d", "12h", or whole milliseconds; at least 1h', examples: ['30d'] });

/** A namespace's own retention of its history (null or left out: the cluster's). */
export const NamespaceRetentionBody = z
  .strictObject({
    history: RetentionDuration.nullable()
      .optional()
      .meta({ description: 'how long its ended executions and their events are kept, from their slot' }),
    deadLetters: RetentionDuration.nullable()
      .optional()
      .meta({ description: 'how long its dead letters stay listed and replayable, from their slot' }),
  })
  .meta({ id: 'NamespaceRetentionBody' });

export const NamespacePutBody = z
  .strictObject({
    description: z.string().max(1000).nullable().optional(),
    quotas: NamespaceQuotas.optional(),
    retention: NamespaceRetentionBody.optional(),
  })
  .meta({ id: 'NamespacePutBody' });

/** A retention as the API shows it: the namespace's own (null: none), the one in force, and the slot history is kept from. */
export const RetentionInForce = z
  .object({
    own: z.string().nullable().meta({ description: "the namespace's own retention; null: the cluster's" }),
    inForce: z.string().meta({ description: 'the retention in force (at least the longest maxDelay of any task)' }),
    keptFrom: Timestamp.meta({ description: 'slots before this are past the retention: removed by the next pass' }),
  })
  .meta({ id: 'RetentionInForce' });

const use = z.object({ used: z.number().int(), limit: z.number().int().nullable() });

export const Namespace = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    quotas: z.object({
      maxTasks: z.number().int().nullable(),
      maxRunsPerMinute: z.number().int().nullable(),
      maxConcurrentRuns: z.number().int().nullable(),
    }),
    use: z
      .object({
        maxTasks: use.meta({ description: 'tasks in the namespace' }),
        maxRunsPerMinute: use.meta({
          description: 'starts in the last minute counted under the quota (recorded while it is set)',
        }),
        maxConcurrentRuns: use.meta({ description: 'its runs running now' }),
      })
      .meta({ description: 'each quota with what the namespace uses of it now' }),
    retention: z
      .object({ history: RetentionInForce, deadLetters: RetentionInForce })
      .meta({ description: 'how long its history is kept: ended executions and their events, and dead letters' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Namespace' });

/** `GET /v1/namespaces`: a page of them by name, those starting with `prefix` when given. */
export const NamespaceListQuery = PageQuery.extend({
  prefix: z
    .string()
    .max(63)
    .regex(/^[a-z0-9-]*$/, 'must be the start of a namespace name: a-z, 0-9 and -')
    .optional()
    .meta({ description: 'only the namespaces whose name starts with this' }),
});
export const NamespacePage = Page(Namespace).meta({ id: 'NamespacePage' });

export type NamespacePutBody = z.infer<typeof NamespacePutBody>;
export type NamespaceQuotas = z.infer<typeof NamespaceQuotas>;
export type NamespaceRetentionBody = z.infer<typeof NamespaceRetentionBody>;
export type RetentionInForce = z.infer<typeof RetentionInForce>;
export type Namespace = z.infer<typeof Namespace>;
export type NamespacePage = z.infer<typeof NamespacePage>;
export type NamespaceListQuery = z.input<typeof NamespaceListQuery>;
export type QuotaName = keyof typeof QUOTA_CAPS;
