import type { TRIGGERS } from '@punctual/contract';

/** What started a run: its schedule, a misfire catch-up, an operator (now, or a backfill). */
export type Trigger = (typeof TRIGGERS)[number];

/** A slot the planner (or an operator's trigger, backfill or resume) wants recorded. */
export interface PlannedExecution {
  id: string;
  taskId: string;
  taskName: string;
  scheduledFor: Date;
  fireAt: Date;
  trigger: Trigger;
  /** `missed` rows are written terminal, with `finished_at`. */
  status: 'scheduled' | 'missed';
  taskVersion: number;
  exclusive: boolean;
  /** The handler it runs (its task's): its job goes to that handler's queue. */
  handler: string;
  /**
   * A catch-up run: the first slot it stands in for (the late slots from there to its own); the
   * first missed row of a pass: the first of the late slots before it that were only counted.
   */
  coversFrom?: Date | null;
}

/** The cursor move the planner made for one task. */
export interface CursorAdvance {
  id: string;
  /** The next slot not yet planned; null once the schedule has no more slots. */
  nextRunAt: Date | null;
  lastScheduledFor: Date | null;
  missed: number;
  /** Slots planned to run (a run limit counts them down). */
  runs: number;
}
