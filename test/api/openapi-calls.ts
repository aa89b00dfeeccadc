import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';

type Parameter = { name: string; in: string; required?: boolean };
type Operation = { operationId: string; parameters?: Parameter[]; requestBody?: { required?: boolean } };
export type OpenApiDocument = { paths: Record<string, Record<string, Operation>> };

/** A module of openapi-fetch calls and the line each operation's call is on. */
export interface Calls {
  source: string;
  lineOf: Record<string, number>;
}

const HEAD = [
  "import createClient from 'openapi-fetch';",
  "import type { paths } from './schema.js';",
  '',
  '// unknown, not never, where no body type is found: unknown is assignable to no declared body, so a miss fails.',
  "type JsonBody<R> = NonNullable<R> extends { content: { 'application/json': infer B } } ? B : unknown;",
  '/** A value of the body type the document declares: what a caller must write, no more. */',
  'declare function bodyOf<P extends keyof paths, M extends keyof paths[P]>(path: P, method: M): JsonBody<paths[P][M] extends { requestBody?: infer R } ? R : unknown>;',
  '',
  "const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:3000' });",
  '',
  'export async function callEveryOperation(): Promise<void> {',
];

/**
 * A TypeScript module that calls every operation of `document` through openapi-fetch with only
 * what the document requires: each path parameter (a string), and a body only where the body is
 * required. A required query or header parameter has no value to give here and is refused.
 */
export function callsOfEveryOperation(document: OpenApiDocument): Calls {
  const lines = [...HEAD];
  const lineOf: Record<string, number> = {};
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      lineOf[operation.operationId] = lines.length + 1;
      lines.push(
        `  await client.${method.toUpperCase()}(${[JSON.stringify(path), init(path, method, operation)].filter(Boolean).join(', ')});`,
      );
    }
  }
  lines.push('}', '');
  return { source: lines.join('\n'), lineOf };
}

function init(path: string, method: string, operation: Operation): string {
  const parameters = operation.parameters ?? [];
  const unanswerable = parameters.filter((p) => p.required && p.in !== 'path');
  if (unanswerable.length)
    throw new Error(
      `${operation.operationId} requires ${unanswerable.map((p) => `${p.in} ${p.name}`).join(', ')}: give the calls a value for it`,
    );
  const pathParams = parameters.filter((p) => p.in === 'path').map((p) => `${p.name}: 'x'`);
  const fields = [
    ...(pathParams.length ? [`params: { path: { ${pathParams.join(', ')} } }`] : []),
    ...(operation.requestBody?.required ? [`body: bodyOf(${JSON.stringify(path)}, ${JSON.stringify(method)})`] : []),
  ];
  return fields.length ? `{ ${fields.join(', ')} }` : '';
}

const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const run = promisify(execFile);

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: 'ES2023',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2023', 'DOM'],
    types: [],
    skipLibCheck: true,
  },
  files: ['calls.ts'],
};

/**
 * Generates `document`'s types with openapi-typescript into `dir`, writes `calls` beside them and
 * runs `tsc --noEmit` there (openapi-fetch resolves from the repository's node_modules). Answers the
 * compiler's error lines: none when every call type-checks.
 */
export async function typeCheckCalls(document: OpenApiDocument, calls: Calls, dir: string): Promise<string[]> {
  writeFileSync(join(dir, 'schema.ts'), astToString(await openapiTS(JSON.stringify(document))));
  writeFileSync(join(dir, 'calls.ts'), calls.source);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  try {
    await run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json'), '--pretty', 'false'], { cwd: dir });
    return [];
  } catch (error) {
    const output = (error as { stdout?: string }).stdout ?? '';
    const errors = output.split('\n').filter((line) => /\(\d+,\d+\): error TS/.test(line));
    // tsc failing without a type error (not found, bad config) must not pass for a refused call.
    if (errors.length === 0) throw error;
    return errors;
  }
}
