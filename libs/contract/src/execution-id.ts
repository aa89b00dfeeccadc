/**
 * An execution's id: a UUIDv7 (RFC 9562) whose 48-bit timestamp is the execution's slot, in epoch
 * milliseconds (the precision slots are stored at), and 74 random bits. `task_execution` is
 * partitioned by slot, so an id alone names the partition its row is in (`punctual_slot_of(id)` in
 * Postgres reads the same instant back); the job id in the queue is this id too. Two executions of
 * one slot cannot exist (`UNIQUE (task_id, scheduled_for)`); ids of different tasks' executions of
 * one millisecond differ by their random bits.
 */
export function executionIdFor(slot: Date): string {
  const ms = slot.getTime();
  if (!Number.isInteger(ms) || ms < 0 || ms >= 2 ** 48)
    throw new RangeError(`no execution id for the slot ${String(slot)}`);
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  let rest = ms;
  for (let i = 5; i >= 0; i -= 1) {
    bytes[i] = rest % 256;
    rest = Math.floor(rest / 256);
  }
  bytes[6] = 0x70 | (bytes[6]! & 0x0f); // version 7
  bytes[8] = 0x80 | (bytes[8]! & 0x3f); // the RFC 9562 variant
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The slot an execution id carries (see {@link executionIdFor}); null for an id that is not a
 * UUIDv7 (one made before executions were partitioned).
 */
export function slotOfExecutionId(id: string): Date | null {
  if (!UUID.test(id) || id[14] !== '7') return null;
  return new Date(Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16));
}
