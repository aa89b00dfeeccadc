/** An execution as the overlap judgement below reads it: its first start from its history. */
export interface OverlapRow {
  id: string;
  scheduled_for: Date;
  exclusive: boolean;
  first_start: Date | null;
  finished_at: Date | null;
}

/** A run's `finished_at` is when its outcome's statement wrote its row; a claim sees it end only once that commits, a few milliseconds later (more on a loaded machine). */
const COMMIT_SLACK_MS = 100;

/**
 * Why a `skipped(overlap)` execution should not have been skipped, or null when the policy was
 * right to (DESIGN §4): it never started, its task's policy is exclusive, and another exclusive run
 * of the task (running, or between attempts) was in progress at the skipped slot's own
 * `scheduled_for`. A slot that waited its turn behind a backlog and was skipped later is wrong.
 */
export function wrongOverlapSkip(skipped: OverlapRow, rows: OverlapRow[], overlap: string): string | null {
  if (overlap === 'allow') return 'its task allows overlaps';
  if (skipped.first_start) return 'it had started: a retry is never judged by the overlap policy';
  const at = skipped.scheduled_for.getTime();
  const holder = rows.find(
    (r) =>
      r.id !== skipped.id &&
      r.exclusive &&
      r.first_start &&
      r.first_start.getTime() <= at &&
      (!r.finished_at || r.finished_at.getTime() >= at - COMMIT_SLACK_MS),
  );
  return holder ? null : 'no other run of its task was in progress at its own time';
}
