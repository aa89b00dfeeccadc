/** The planner's epoch is no longer the newest: another leader has taken over. */
export class FencedOutError extends Error {
  override readonly name = 'FencedOutError';
  constructor(readonly epoch: bigint) {
    super(`epoch ${epoch} was superseded by a newer leader`);
  }
}
