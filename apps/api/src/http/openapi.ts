import {
  DEFAULT_NAMESPACE,
  ErrorEnvelope,
  isBodyOptional,
  NAMESPACE_NAME_PATTERN,
  type RouteDef,
  routes,
} from '@punctual/contract';
import { z } from 'zod';

type JsonSchema = Record<string, unknown>;

const COMMON_ERRORS = [400, 401, 403, 404, 422, 429];
const ERROR_TEXT: Record<number, string> = {
  400: 'Malformed request (wrong JSON type, unknown field)',
  401: 'No valid API key',
  403: 'The key lacks the role',
  404: 'Not found',
  409: 'Conflict (name taken, version moved on, wrong state)',
  413: 'Body or payload too large',
  422: 'Well-formed, but the meaning is invalid',
  429: 'Too many failed authentications',
};

/**
 * The OpenAPI 3.1 document of the API, generated from the contract's route table and zod schemas:
 * every operation with its parameters, its typed success response and the error envelope.
 */
export function openApiDocument() {
  const schemas = componentSchemas();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, route] of Object.entries(routes) as [string, RouteDef][]) {
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = operation(operationId, route);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Punctual',
      version: '1',
      description:
        'Scheduled work, on time, exactly once per slot. Authenticate with `Authorization: Bearer <api key>`.',
    },
    servers: [{ url: '/', description: 'this API' }],
    security: [{ bearer: [] }],
    tags: [...new Set(Object.values(routes).map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: { schemas, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
  };
}

function operation(operationId: string, route: RouteDef) {
  const parameters = [
    ...[...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
      name,
      in: 'path',
      required: true,
      schema: name === 'id' ? { type: 'string', format: 'uuid' } : { type: 'string' },
    })),
    ...queryParameters(route.query),
    ...(route.cluster ? [] : [NAMESPACE_PARAMETER]),
    ...(route.headers ?? []).map((h) => ({
      name: h.name,
      in: 'header',
      required: false,
      description: h.description,
      schema: { type: 'string' },
    })),
  ];
  const success = route.response
    ? { description: route.summary, content: { 'application/json': { schema: schemaRef(route.response) } } }
    : { description: 'No content' };
  const responses: Record<string, unknown> = {};
  for (const status of [route.status, ...(route.alsoStatus ?? [])]) responses[String(status)] = success;
  for (const status of [...COMMON_ERRORS, ...(route.errors ?? [])].sort()) {
    responses[String(status)] = {
      description: ERROR_TEXT[status],
      content: { 'application/json': { schema: schemaRef(ErrorEnvelope) } },
    };
  }
  return {
    operationId,
    summary: route.summary,
    ...(route.description && { description: route.description }),
    tags: [route.tag],
    'x-required-role': route.role,
    ...(parameters.length && { parameters }),
    ...(route.body && {
      requestBody: {
        required: !isBodyOptional(route),
        content: { 'application/json': { schema: schemaRef(route.body) } },
      },
    }),
    responses,
  };
}

/** The query parameter of every route of a namespace (see `RouteDef.cluster`). */
const NAMESPACE_PARAMETER = {
  name: 'namespace',
  in: 'query',
  required: false,
  description: `the namespace the request acts in (default \`${DEFAULT_NAMESPACE}\`); one the key may not see is a 404`,
  schema: { type: 'string', pattern: NAMESPACE_NAME_PATTERN.source, default: DEFAULT_NAMESPACE },
};

/** Every query parameter of a route, from its schema's fields. */
function queryParameters(query: z.ZodType | undefined) {
  const shape = (query as unknown as { shape?: Record<string, z.ZodType> } | undefined)?.shape ?? {};
  return Object.entries(shape).map(([name, field]) => {
    const schema = clean(z.toJSONSchema(field, { io: 'input', unrepresentable: 'any' }));
    const required = !field.safeParse(undefined).success;
    const description = typeof schema.description === 'string' ? schema.description : undefined;
    return {
      name,
      in: 'query',
      required,
      ...(description && { description }),
      schema,
      ...(schema.type === 'array' && { style: 'form', explode: true }),
    };
  });
}

/** `$ref` to a named component, or the schema inline. */
function schemaRef(schema: z.ZodType): JsonSchema {
  const id = z.globalRegistry.get(schema)?.id;
  return id
    ? { $ref: `#/components/schemas/${id}` }
    : clean(z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }));
}

/** Every schema of the contract that carries an id, as OpenAPI components. */
function componentSchemas(): Record<string, JsonSchema> {
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    io: 'input',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, JsonSchema> };
  return Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, clean(schema)]));
}

/**
 * JSON Schema as OpenAPI 3.1 wants it inside a document: no `$schema`/`$id`, no unreadable
 * date-time regexes. A default is said in words: type generators read a `default` as "always
 * present", which is true of the task the API returns but not of the spec a user writes.
 */
function clean(schema: JsonSchema): JsonSchema {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const node = value as JsonSchema;
    const out: JsonSchema = {};
    for (const [key, child] of Object.entries(node)) {
      if (key === '$schema' || key === '$id' || key === 'default') continue;
      if (key === 'pattern' && node.format === 'date-time') continue;
      out[key] = walk(child);
    }
    if ('default' in node)
      out.description = [node.description, `Default: ${JSON.stringify(node.default)}.`].filter(Boolean).join('. ');
    return out;
  };
  return walk(schema) as JsonSchema;
}
