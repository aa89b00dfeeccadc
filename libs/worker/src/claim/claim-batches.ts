import {
  type ClaimAnswer,
  type ClaimRead,
  type ClaimsRepository,
  type ClaimWrite,
  type DirectClaim,
  isConnectionError,
  type ParkRequest,
  type TurnsRepository,
} from '@punctual/db';
import { Batcher } from '../batcher.js';

/**
 * Claims read or written per statement, and statements of each kind in flight at once: a worker's
 * concurrent jobs share a statement, and the next batch leaves while one is on its way.
 */
export const BATCH = 200;
export const BATCHES_IN_FLIGHT = 3;

/**
 * The statements of a worker's claims, each shared by the claims that arrive together (see
 * {@link Batcher}): the one-statement claim, the read for the judgement, the write of a claim the
 * judgement allowed, the park of a slot whose turn has not come — each answering a ClaimAnswer
 * per claim but the read. A batch that lost its connection
 * may have committed: its claims each find out (the claimer's confirmation), none is retried blind.
 */
export class ClaimBatches {
  readonly direct: Batcher<DirectClaim, ClaimAnswer>;
  readonly reads: Batcher<{ id: string; taskId?: string }, ClaimRead | null>;
  readonly writes: Batcher<ClaimWrite, ClaimAnswer>;
  readonly parks: Batcher<ParkRequest, ClaimAnswer>;

  constructor(
    claims: ClaimsRepository,
    turns: TurnsRepository,
    options: { leaseMs: number; handlers: () => readonly string[] },
  ) {
    const retryAlone = (error: unknown) => !isConnectionError(error);
    // A claim given up on before its statement left is never sent: sent later, it could start an
    // attempt nobody waits for (and spend it, its handler never run).
    const abandoned = (claim: DirectClaim | ClaimWrite) => claim.abandoned?.() === true;
    this.direct = new Batcher<DirectClaim, ClaimAnswer>(
      (batch) => claims.claimDirect(batch, options.leaseMs, options.handlers()),
      (claim) => claims.claimDirectOne(claim, options.leaseMs, options.handlers()),
      BATCH,
      BATCHES_IN_FLIGHT,
      retryAlone,
      abandoned,
    );
    this.reads = new Batcher(
      async (requests) => {
        const unique = [...new Map(requests.map((r) => [r.id, r])).values()];
        const found = await claims.read(unique);
        return requests.map((r) => found.get(r.id) ?? null);
      },
      null,
      BATCH,
      BATCHES_IN_FLIGHT,
    );
    this.writes = new Batcher<ClaimWrite, ClaimAnswer>(
      (writes) => claims.claimMany(writes, options.leaseMs),
      (write) => claims.claimOne(write, options.leaseMs),
      BATCH,
      BATCHES_IN_FLIGHT,
      retryAlone,
      abandoned,
    );
    this.parks = new Batcher((requests) => turns.park(requests), null, BATCH, BATCHES_IN_FLIGHT);
  }
}
