import { readFileSync } from 'node:fs';
import { ManagedBy, TaskSpec } from '@punctual/contract';
import { type Document, isMap, isNode, isScalar, isSeq, LineCounter, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { substituteEnv } from './env-substitution.js';
import { TaskFileError } from './errors.js';

/** Where a task of a file was declared: for error messages that name the file, the line and the task. */
export interface TaskOrigin {
  file: string;
  line: number;
  name: string;
}

/** A task file, read and validated: what `diff` and `apply` send. */
export interface TaskFile {
  /** The file's `managedBy`, if it names one. */
  managedBy?: string;
  tasks: TaskSpec[];
  /** For each task of `tasks`, where it was declared. */
  origins: TaskOrigin[];
  /** For each task name, the paths of its fields whose value came from the environment. */
  secretPaths: Map<string, string[]>;
  /** Every value substituted from the environment. */
  secretValues: string[];
}

const FileDocument = z.strictObject({ managedBy: ManagedBy.optional(), tasks: z.array(z.unknown()) });

/** A task as declared in a document: where it is, for reading it and naming it in messages. */
interface Declared {
  doc: Document;
  at: (string | number)[];
  label: string;
}

/**
 * Reads a YAML or JSON task file (JSON is YAML): `{ managedBy?, tasks: [TaskSpec…] }`, a list of
 * specs, or one document per task, in any mix. `${VAR}` in a value is taken from `env` (`$${` is a
 * literal `${`). Every task is validated by the contract's TaskSpec; names are unique, and a task
 * naming a `managedBy` names the file's. Throws {@link TaskFileError} with one line per problem.
 */
export function readTaskFile(file: string, env: Record<string, string | undefined>): TaskFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new TaskFileError([`${file}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
  }
  const reader = new TaskFileReader(file, text);
  const { declared, managedBy } = reader.documents();
  const result = reader.tasks(declared, managedBy, env);
  if (reader.problems.length) throw new TaskFileError(reader.problems);
  return result;
}

/** One file's reading: its documents, then its tasks, collecting every problem on the way. */
class TaskFileReader {
  readonly problems: string[] = [];
  private readonly lines = new LineCounter();
  private readonly parsed: Document[];

  constructor(
    private readonly file: string,
    text: string,
  ) {
    this.parsed = parseAllDocuments(text, { lineCounter: this.lines }) as Document[];
  }

  /** The tasks each document declares, and the file's manager. */
  documents(): { declared: Declared[]; managedBy?: string } {
    const declared: Declared[] = [];
    const managers = new Set<string>();
    for (const doc of this.parsed) {
      // The first error of a document says what is wrong; the ones after it follow from it.
      const [error] = doc.errors;
      if (error) {
        this.problems.push(`${this.file}:${error.linePos?.[0].line ?? 1}: not valid YAML or JSON: ${error.message.split('\n')[0]!.replace(/:$/, '')}`);
        continue;
      }
      const contents = doc.contents;
      if (contents === null || (isScalar(contents) && contents.value === null)) continue;
      if (isSeq(contents)) {
        contents.items.forEach((_, i) => declared.push({ doc, at: [i], label: `[${i}]` }));
      } else if (isMap(contents) && contents.has('tasks')) {
        const parsed = FileDocument.safeParse(doc.toJS());
        if (!parsed.success) {
          for (const issue of describeIssues(parsed.error.issues)) this.problems.push(`${this.file}:${this.lineOf(doc, issue.path)}: ${issue.text}`);
          continue;
        }
        if (parsed.data.managedBy) managers.add(parsed.data.managedBy);
        parsed.data.tasks.forEach((_, i) => declared.push({ doc, at: ['tasks', i], label: `tasks[${i}]` }));
      } else if (isMap(contents) && contents.has('name')) {
        declared.push({ doc, at: [], label: 'the task' });
      } else {
        this.problems.push(`${this.file}:${this.lineOf(doc, [])}: a document must be { managedBy?, tasks: [...] }, a list of tasks or one task (with a name)`);
      }
    }
    if (managers.size > 1) this.problems.push(`${this.file}: its documents name different managers (${[...managers].join(', ')}): one file has one managedBy`);
    return { declared, managedBy: [...managers][0] };
  }

  /** Every declared task, substituted and validated, with where it came from. */
  tasks(declared: Declared[], managedBy: string | undefined, env: Record<string, string | undefined>): TaskFile {
    const out: TaskFile = { managedBy, tasks: [], origins: [], secretPaths: new Map(), secretValues: [] };
    const seen = new Map<string, number>();
    for (const { doc, at, label } of declared) {
      const node = at.length ? doc.getIn(at, true) : doc.contents;
      const raw: unknown = isNode(node) ? node.toJSON() : node;
      const line = this.lineOf(doc, at);
      const name = typeof (raw as { name?: unknown } | null)?.name === 'string' ? (raw as { name: string }).name : undefined;
      const task = name ? `task "${name}"` : label;
      const problem = (path: (string | number)[], text: string) => this.problems.push(`${this.file}:${this.lineOf(doc, [...at, ...path])}: ${task}: ${text}`);
      const first = name === undefined ? undefined : seen.get(name);
      if (first !== undefined) {
        this.problems.push(`${this.file}:${line}: ${task}: the name is declared twice (first at line ${first})`);
        continue;
      }
      if (name !== undefined) seen.set(name, line);
      const substituted = substituteEnv(raw, env);
      for (const missing of substituted.missing) problem(missing.path, `${dotted(missing.path)}: environment variable ${missing.variable} is not set`);
      if (substituted.missing.length) continue;
      const parsed = TaskSpec.safeParse(substituted.value);
      if (!parsed.success) {
        for (const issue of describeIssues(parsed.error.issues)) problem(issue.path, issue.text);
        continue;
      }
      const spec = parsed.data;
      out.managedBy ??= spec.managedBy ?? undefined;
      if (spec.managedBy !== undefined && spec.managedBy !== out.managedBy) {
        problem(['managedBy'], `managedBy: must be the file's managedBy ("${out.managedBy}") or left out`);
        continue;
      }
      out.tasks.push(spec);
      out.origins.push({ file: this.file, line, name: spec.name });
      out.secretPaths.set(spec.name, substituted.paths.map(dotted));
      out.secretValues.push(...substituted.values.filter((v) => !out.secretValues.includes(v)));
    }
    return out;
  }

  /** The line of the node at `path` in `doc`, or of the nearest node that holds it. */
  private lineOf(doc: Document, path: (string | number)[]): number {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
      if (node?.range) return this.lines.linePos(node.range[0]).line;
    }
    return 1;
  }
}

/** `schedule.cron`, `payload.items[2]`. */
export function dotted(path: readonly (string | number | symbol)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}

/** One problem per issue (per field for unknown fields), each with the path of the field. */
function describeIssues(issues: z.core.$ZodIssue[]): { path: (string | number)[]; text: string }[] {
  return issues.flatMap((issue) => {
    const path = issue.path as (string | number)[];
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: [...path, key], text: `${dotted([...path, key])}: unknown field` }));
    return [{ path, text: `${dotted(path) || '(document)'}: ${issue.message}` }];
  });
}
