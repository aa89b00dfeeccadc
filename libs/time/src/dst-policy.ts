import { InvalidScheduleError } from './errors.js';

/**
 * How matching wall times that do not exist (a spring-forward gap) or occur twice (a fall-back
 * overlap) become instants. `gap`: `shift` forward by the gap's length, `skip`, or fire at the
 * `end` of the gap. `overlap`: fire at the `first` occurrence, the `last`, or `both`.
 */
export interface DstPolicy {
  gap?: 'shift' | 'skip' | 'end';
  overlap?: 'first' | 'last' | 'both';
}

/** DESIGN §6 for a fixed-time expression: shift through a gap, fire once in an overlap. */
export const FIXED_TIME_RULE: Readonly<Required<DstPolicy>> = Object.freeze({ gap: 'shift', overlap: 'first' });
/** DESIGN §6 for a wildcard-hour expression (elapsed time): nothing in a gap, both passes of an overlap. */
export const ELAPSED_TIME_RULE: Readonly<Required<DstPolicy>> = Object.freeze({ gap: 'skip', overlap: 'both' });

const GAPS = ['shift', 'skip', 'end'];
const OVERLAPS = ['first', 'last', 'both'];

/**
 * The rule a schedule follows: the default for its kind of expression, with the task's explicit
 * choices on top. Overrides apply to wildcard-hour expressions too (e.g. `overlap: first` keeps a
 * `*\/15` job from running twice in a repeated hour); slots that then coincide fire once.
 */
export function resolveDstRule(wildcardHour: boolean, dst: DstPolicy | null | undefined): Required<DstPolicy> {
  const base = wildcardHour ? ELAPSED_TIME_RULE : FIXED_TIME_RULE;
  const gap = dst?.gap ?? base.gap;
  const overlap = dst?.overlap ?? base.overlap;
  if (!GAPS.includes(gap))
    throw new InvalidScheduleError('schedule.dst.gap', `schedule.dst.gap must be one of ${GAPS.join(', ')}`);
  if (!OVERLAPS.includes(overlap)) {
    throw new InvalidScheduleError(
      'schedule.dst.overlap',
      `schedule.dst.overlap must be one of ${OVERLAPS.join(', ')}`,
    );
  }
  return { gap, overlap };
}
