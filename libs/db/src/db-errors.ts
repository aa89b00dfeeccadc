/**
 * What a failed statement's error says about its cause, read from codes — never from the wording of
 * a message, which Postgres, pg and Prisma each phrase their own way (and translate).
 *
 * The shapes met, by what throws them (probed against Postgres with Prisma 7.5 and @prisma/adapter-pg):
 * - pg (the pool's own statements): its `DatabaseError` carries the SQLSTATE as `code`; a socket's
 *   failure is node's error with `code` (`ECONNREFUSED`, `ECONNRESET`…);
 * - Prisma: `PrismaClientKnownRequestError` with a Prisma `code` (`P2010` for any raw query,
 *   `P1001` when the server cannot be reached), its `meta.driverAdapterError` a `DriverAdapterError`
 *   whose `cause` is the adapter's reading: `{ kind: 'postgres', code: <SQLSTATE> }`, `{ kind:
 *   'UniqueConstraintViolation', originalCode: '23505' }`, `{ kind: 'DatabaseNotReachable' }`…
 */
interface ErrorLink {
  code?: unknown;
  originalCode?: unknown;
  kind?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: unknown };
}

/** The error and each one it wraps: `cause`, and Prisma's `meta.driverAdapterError`. */
function* chain(error: unknown): Generator<ErrorLink> {
  const seen = new Set<unknown>();
  for (let link = error; link !== null && typeof link === 'object' && !seen.has(link);) {
    seen.add(link);
    const e = link as ErrorLink;
    yield e;
    link = e.cause ?? e.meta?.driverAdapterError;
  }
}

/** The codes along an error's chain: SQLSTATEs, node's system error codes, Prisma's codes. */
function codesOf(error: unknown): string[] {
  return [...chain(error)].flatMap((e) =>
    [e.code, e.originalCode].filter((code): code is string => typeof code === 'string'),
  );
}

/**
 * SQLSTATE class 08 (connection exception) and 57P01-57P03: the server ended the session (an
 * administrator's `pg_terminate_backend`, a shutdown, a crash) or is not accepting it yet.
 */
const CONNECTION_SQLSTATES = /^(08[0-9A-Z]{3}|57P0[123])$/;
/** Node's codes for a socket that could not connect or was cut (and `ClaimTimeoutError`'s). */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
/** Prisma: the database server cannot be reached (P1001), or closed the connection (P1017). */
const PRISMA_CONNECTION_CODES = new Set(['P1001', 'P1017']);
/** The driver adapter's kinds for a socket's failure (it maps ECONNREFUSED, ENOTFOUND, ECONNRESET, ETIMEDOUT to these). */
const ADAPTER_CONNECTION_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout']);
/**
 * pg's errors for a connection that ended under a statement without a socket error (the server's
 * FIN, a proxy that dropped it): pg creates them with no code at all (lib/client.js), and Prisma
 * hands them on unchanged. Their exact words are all there is; they are pg's own, never a message
 * of Postgres or of a caller.
 */
const PG_CONNECTION_ENDED = new Set([
  'Connection terminated',
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'Client has encountered a connection error and is not queryable',
]);

/**
 * The statement failed because its connection did (a session killed, Postgres restarting, a network
 * cut), not because of what it asked: the same statement on a fresh connection may well succeed.
 */
export function isConnectionError(error: unknown): boolean {
  for (const e of chain(error)) {
    if (typeof e.kind === 'string' && ADAPTER_CONNECTION_KINDS.has(e.kind)) return true;
    if (e.code === undefined && typeof e.message === 'string' && PG_CONNECTION_ENDED.has(e.message)) return true;
  }
  return codesOf(error).some(
    (code) => CONNECTION_SQLSTATES.test(code) || SOCKET_CODES.has(code) || PRISMA_CONNECTION_CODES.has(code),
  );
}

/** Postgres gave up waiting for a lock (`lock_timeout`, SQLSTATE 55P03 lock_not_available): worth another try, not a failure. */
export function isLockTimeout(error: unknown): boolean {
  return codesOf(error).includes('55P03');
}

/** The statement failed with this SQLSTATE (anywhere along the error's chain). */
export function hasSqlState(error: unknown, sqlstate: string): boolean {
  return codesOf(error).includes(sqlstate);
}

/** A unique violation (SQLSTATE 23505, Prisma's P2002): a row with the same key is there, or a concurrent insert of one won. */
export function isUniqueViolation(error: unknown): boolean {
  return codesOf(error).some((code) => code === '23505' || code === 'P2002');
}

/** A foreign-key violation (SQLSTATE 23503, Prisma's P2003): the row referred to is gone. */
export function isForeignKeyViolation(error: unknown): boolean {
  return codesOf(error).some((code) => code === '23503' || code === 'P2003');
}
