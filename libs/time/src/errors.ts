/** A schedule that cannot be understood; `field` is the path of the offending input (e.g. `schedule.cron`). */
export class InvalidScheduleError extends Error {
  override readonly name = 'InvalidScheduleError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** A local wall time that does not exist or exists twice in its zone, given without a disambiguation. */
export class AmbiguousLocalTimeError extends Error {
  override readonly name = 'AmbiguousLocalTimeError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}
