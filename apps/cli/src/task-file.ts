import { readFileSync } from 'node:fs';
import { CalendarSpec, fieldPath, ManagedBy, NamespaceName, TaskSpec } from '@punctual/contract';
import { type Document, isMap, isNode, isScalar, isSeq, LineCounter, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { substituteEnv } from './env-substitution.js';
import { TaskFileError } from './errors.js';
import { parseWithProblems } from './schema-problems.js';
import { describeYamlError } from './yaml-problems.js';

/** Where a task (or a calendar) of a file was declared: for error messages that name the file, the line and the item. */
export interface TaskOrigin {
  file: string;
  line: number;
  name: string;
  /** The line of one of its fields (`['schedule', 'cron']`), or of the nearest node holding it: where the API's word about that field points. */
  lineOf?: (path: (string | number)[]) => number;
}

/** Where the items an apply sends were declared, by their index in the request's `tasks` and `calendars`. */
export interface FileOrigins {
  tasks: TaskOrigin[];
  calendars: TaskOrigin[];
}

/** A task file, read and validated: what `diff` and `apply` send. */
export interface TaskFile {
  /** The file's `managedBy`, if it names one. */
  managedBy?: string;
  /** The namespace the file's tasks and calendars belong to, if it names one. */
  namespace?: string;
  tasks: TaskSpec[];
  /** For each task of `tasks`, where it was declared. */
  origins: TaskOrigin[];
  /** The calendars the file declares; absent when no document has a `calendars` key (the calendars are then left alone). */
  calendars?: CalendarSpec[];
  /** For each calendar of `calendars`, where it was declared. */
  calendarOrigins: TaskOrigin[];
  /** For each task name, the paths of its fields whose value came from the environment. */
  secretPaths: Map<string, string[]>;
  /** The same for each calendar name. */
  calendarSecretPaths: Map<string, string[]>;
  /** Every value substituted from the environment. */
  secretValues: string[];
}

const FileDocument = z.strictObject({
  managedBy: ManagedBy.optional(),
  namespace: NamespaceName.optional(),
  tasks: z.array(z.unknown()),
  calendars: z.array(z.unknown()).optional(),
});

/** What a file declares: tasks, and calendars of excluded days beside them. */
type Kind = 'task' | 'calendar';

/** A task or calendar as declared in a document: where it is, for reading it and naming it in messages. */
interface Declared {
  doc: Document;
  at: (string | number)[];
  label: string;
}

/**
 * Reads a YAML or JSON task file (JSON is YAML): `{ managedBy?, tasks: [TaskSpec…], calendars?:
 * [CalendarSpec…] }`, a list of specs, or one document per task, in any mix. `${VAR}` in a value is
 * taken from `env` (`$${` is a literal `${`). Every task is validated by the contract's TaskSpec and
 * every calendar by its CalendarSpec; names are unique (tasks among tasks, calendars among
 * calendars), and a task or calendar naming a `managedBy` names the file's. Throws
 * {@link TaskFileError} with one line per problem.
 */
export function readTaskFile(file: string, env: Record<string, string | undefined>): TaskFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new TaskFileError([
      `${file}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    ]);
  }
  const reader = new TaskFileReader(file, text);
  const { declared, calendars, managedBy, namespace } = reader.documents();
  const out: TaskFile = {
    managedBy,
    ...(namespace && { namespace }),
    tasks: [],
    origins: [],
    calendarOrigins: [],
    secretPaths: new Map(),
    calendarSecretPaths: new Map(),
    secretValues: [],
  };
  reader.read(declared, 'task', TaskSpec, env, out, {
    specs: out.tasks,
    origins: out.origins,
    secretPaths: out.secretPaths,
  });
  if (calendars) {
    out.calendars = [];
    reader.read(calendars, 'calendar', CalendarSpec, env, out, {
      specs: out.calendars,
      origins: out.calendarOrigins,
      secretPaths: out.calendarSecretPaths,
    });
  }
  if (reader.problems.length) throw new TaskFileError(reader.problems, out);
  return out;
}

/** One file's reading: its documents, then its tasks and calendars, collecting every problem on the way. */
class TaskFileReader {
  readonly problems: string[] = [];
  private readonly lines = new LineCounter();
  private readonly parsed: Document[];

  constructor(
    private readonly file: string,
    private readonly text: string,
  ) {
    this.parsed = parseAllDocuments(text, { lineCounter: this.lines }) as Document[];
  }

  /** The tasks each document declares, its calendars (when a document has the key) and the file's manager. */
  documents(): { declared: Declared[]; calendars?: Declared[]; managedBy?: string; namespace?: string } {
    const declared: Declared[] = [];
    let calendars: Declared[] | undefined;
    const managers = new Set<string>();
    const namespaces = new Set<string>();
    for (const doc of this.parsed) {
      // The first error of a document says what is wrong; the ones after it follow from it.
      const [error] = doc.errors;
      if (error) {
        const { line, text } = describeYamlError(error, doc, this.text, this.lines);
        this.problems.push(`${this.file}:${line}: not valid YAML or JSON: ${text}`);
        continue;
      }
      const contents = doc.contents;
      if (contents === null || (isScalar(contents) && contents.value === null)) continue;
      if (isSeq(contents)) {
        contents.items.forEach((_, i) => declared.push({ doc, at: [i], label: `[${i}]` }));
      } else if (isMap(contents) && contents.has('tasks')) {
        const parsed = parseWithProblems(FileDocument, doc.toJS());
        if (parsed.problems) {
          for (const problem of parsed.problems)
            this.problems.push(`${this.file}:${this.lineOf(doc, problem.path)}: ${problem.text}`);
          continue;
        }
        if (parsed.data.managedBy) managers.add(parsed.data.managedBy);
        if (parsed.data.namespace) namespaces.add(parsed.data.namespace);
        parsed.data.tasks.forEach((_, i) => declared.push({ doc, at: ['tasks', i], label: `tasks[${i}]` }));
        if (parsed.data.calendars) {
          calendars ??= [];
          for (const i of parsed.data.calendars.keys())
            calendars.push({ doc, at: ['calendars', i], label: `calendars[${i}]` });
        }
      } else if (isMap(contents) && contents.has('name')) {
        declared.push({ doc, at: [], label: 'the task' });
      } else {
        this.problems.push(
          `${this.file}:${this.lineOf(doc, [])}: a document must be { managedBy?, tasks: [...], calendars?: [...] }, a list of tasks or one task (with a name)`,
        );
      }
    }
    if (namespaces.size > 1)
      this.problems.push(
        `${this.file}: its documents name different namespaces (${[...namespaces].join(', ')}): one file has one namespace`,
      );
    if (managers.size > 1)
      this.problems.push(
        `${this.file}: its documents name different managers (${[...managers].join(', ')}): one file has one managedBy`,
      );
    return { declared, calendars, managedBy: [...managers][0], namespace: [...namespaces][0] };
  }

  /**
   * Every declared item of one kind, substituted and validated by `schema`, into `into` with where
   * it came from; the file's manager (`out.managedBy`) is the first one named if the file names none.
   */
  read<T extends { name: string; managedBy?: string | null }>(
    declared: Declared[],
    kind: Kind,
    schema: z.ZodType<T>,
    env: Record<string, string | undefined>,
    out: TaskFile,
    into: { specs: T[]; origins: TaskOrigin[]; secretPaths: Map<string, string[]> },
  ): void {
    const seen = new Map<string, number>();
    for (const { doc, at, label } of declared) {
      const node = at.length ? doc.getIn(at, true) : doc.contents;
      const raw: unknown = isNode(node) ? node.toJSON() : node;
      const line = this.lineOf(doc, at);
      const name =
        typeof (raw as { name?: unknown } | null)?.name === 'string' ? (raw as { name: string }).name : undefined;
      const item = name ? `${kind} "${name}"` : label;
      const problem = (path: (string | number)[], text: string) =>
        this.problems.push(`${this.file}:${this.lineOf(doc, [...at, ...path])}: ${item}: ${text}`);
      const first = name === undefined ? undefined : seen.get(name);
      if (first !== undefined) {
        this.problems.push(`${this.file}:${line}: ${item}: the name is declared twice (first at line ${first})`);
        continue;
      }
      if (name !== undefined) seen.set(name, line);
      const substituted = substituteEnv(raw, env);
      for (const missing of substituted.missing)
        problem(missing.path, `${fieldPath(missing.path)}: environment variable ${missing.variable} is not set`);
      if (substituted.missing.length) continue;
      const parsed = parseWithProblems(schema, substituted.value);
      if (parsed.problems) {
        for (const found of parsed.problems) problem(found.path, found.text);
        continue;
      }
      const spec = parsed.data;
      out.managedBy ??= spec.managedBy ?? undefined;
      // As the API takes them: an item's managedBy is the file's or left out.
      if (spec.managedBy !== undefined && spec.managedBy !== out.managedBy) {
        problem(['managedBy'], `managedBy: must be the file's managedBy ("${out.managedBy}") or left out`);
        continue;
      }
      into.specs.push(spec);
      into.origins.push({
        file: this.file,
        line,
        name: spec.name,
        lineOf: (path) => this.lineOf(doc, [...at, ...path]),
      });
      into.secretPaths.set(
        spec.name,
        substituted.paths.map((path) => fieldPath(path)),
      );
      out.secretValues.push(...substituted.values.filter((v) => !out.secretValues.includes(v)));
    }
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
