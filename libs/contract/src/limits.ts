/**
 * Every limit and default of the wire contract, in one place. The API validates with them, the
 * domain code applies them, the client and console show them. (The database repeats the task
 * defaults as column defaults in its migrations.)
 */

/** A task's name: its key in URLs (DESIGN §3). */
export const TASK_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,127}$/;
/** A handler's name, as a worker registers it with `@TaskHandler('name')`. */
export const HANDLER_NAME_PATTERN = /^[a-z][a-z0-9._-]{0,63}$/;
/** A label key: lower case, digits and `. _ / -`, 1–63 characters, starting with a letter or digit. */
export const LABEL_KEY_PATTERN = /^[a-z0-9][a-z0-9._/-]{0,62}$/;
/** A label value: letters, digits and `. _ : / @ + -`, at most 128 characters (no `=` or `,`, so `label=k=v` reads one way). */
export const LABEL_VALUE_PATTERN = /^[A-Za-z0-9._:/@+-]{0,128}$/;
export const LABELS_MAX = 20;
/** `managedBy`: who manages the task (e.g. `punctual-apply`). */
export const MANAGED_BY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/;
/** An API key's display name. */
export const API_KEY_NAME_PATTERN = /^[\w .:@-]{1,128}$/;

/** A duration: `250ms`, `30s`, `5m`, `1h`, `7d` (decimals allowed), or whole milliseconds. */
export const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
export const DURATION_UNIT_MS: Readonly<Record<string, number>> = Object.freeze({
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
});
/** The longest duration a task stores (its columns are 32-bit milliseconds: about 24.8 days). */
export const DURATION_MAX_MS = 2_147_483_647;
/** The shortest retention of history (DESIGN §3): shorter would let a slot that can still be planned lose its row. */
export const RETENTION_MIN_MS = 3_600_000;
/** The longest retention: a hundred years. */
export const RETENTION_MAX_MS = 36_500 * 86_400_000;

export const DESCRIPTION_MAX = 4096;
export const CRON_MAX = 256;
export const RRULE_MAX = 4096;
export const AT_MAX = 64;
export const TIMEZONE_MAX = 64;
export const URL_MAX = 2048;
export const SECRET_FIELDS_MAX = 100;
export const SECRET_FIELD_MAX = 256;
export const ATTEMPTS_MAX = 100;

/** Flow control (DESIGN §5): a key is any string of 1–200 characters (`"openai"`, `"twitter:acct-42"`). */
export const FLOW_KEY_MAX = 200;
/** A concurrency or rate limit: 1–10,000. */
export const FLOW_LIMIT_MAX = 10_000;
/** A rate limit's window: 100 ms to 24 h. */
export const RATE_PER_MIN_MS = 100;
export const RATE_PER_MAX_MS = 86_400_000;

/** A task payload: a JSON object of at most 64 KiB (413 beyond), nested at most 32 levels. */
export const PAYLOAD_MAX_BYTES = 64 * 1024;
export const PAYLOAD_MAX_DEPTH = 32;
/** An execution's result: the JSON its handler returned, kept when it is at most 64 KiB, else recorded as `{ truncated: true }` (DESIGN §5). */
export const RESULT_MAX_BYTES = 64 * 1024;
/** A request body (413 beyond); a batch may be larger. */
export const BODY_MAX_BYTES = 256 * 1024;
export const BATCH_BODY_MAX_BYTES = 16 * 1024 * 1024;
/** JSON nested deeper than this is refused before anything walks it. */
export const JSON_MAX_DEPTH = 64;

/** Tasks created or replaced by one `POST /v1/tasks:batch` (and declared by one `POST /v1/tasks:apply`). */
export const BATCH_MAX = 1_000;
/** Who manages the tasks of an apply whose file names nobody (DESIGN §12). */
export const APPLY_MANAGED_BY_DEFAULT = 'punctual-apply';
export const PAGE_LIMIT_DEFAULT = 50;
export const PAGE_LIMIT_MAX = 500;
export const CURSOR_MAX = 512;
export const BACKFILL_DEFAULT = 100;
export const BACKFILL_MAX = 1_000;
export const PREVIEW_DEFAULT = 10;
export const PREVIEW_MAX = 1_000;
/** Fire times shown with a task (`GET /v1/tasks/{name}`), and the most `?upcoming=` may ask for. */
export const UPCOMING_COUNT = 5;
export const UPCOMING_MAX = 100;

/** What a task gets for each field its spec leaves out (DESIGN §3). */
export const TASK_DEFAULTS = Object.freeze({
  timezone: 'UTC',
  jitter: '0s',
  overlap: 'skip',
  misfire: 'run_once',
  maxDelay: '1h',
  attempts: 3,
  backoff: '30s',
  maxBackoff: '1h',
  timeout: '5m',
  notifyOn: Object.freeze(['dead']),
} as const);

/** A task excludes at most this many calendars; a calendar holds at most this many dates and rules. */
export const EXCLUDE_MAX = 20;
export const CALENDAR_DATES_MAX = 10_000;
export const CALENDAR_RRULES_MAX = 100;
/** Calendars one apply may declare. */
export const CALENDARS_APPLY_MAX = 200;
/** Calendar names follow task names' rule. */
export const CALENDAR_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,127}$/;

/** A namespace's name (DESIGN §7, wave 4): what `?namespace=` takes. */
export const NAMESPACE_NAME_PATTERN = /^[a-z0-9-]{1,63}$/;
/** The namespace of a request that names none, and of every task created before namespaces. */
export const DEFAULT_NAMESPACE = 'default';
/** The largest value each namespace quota takes (a quota left out, or null, has no limit). */
export const QUOTA_CAPS = Object.freeze({
  maxTasks: 10_000_000,
  maxRunsPerMinute: 10_000_000,
  maxConcurrentRuns: 1_000_000,
});
