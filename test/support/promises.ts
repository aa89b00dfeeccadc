import { expect } from 'vitest';
import type { SlotReport } from './cluster.js';

/**
 * DESIGN §1 over every slot of a report, counted as a user counts it (calls of the tasks' webhook):
 * none lost, none left unfinished, none succeeded twice, no handler called twice for one slot, no
 * success recorded that the webhook never saw, no webhook call answered 2xx for a slot that did
 * not end succeeded, and no slot skipped for an overlap that no run of its task made.
 */
export function expectEveryPromiseKept(report: SlotReport): void {
  const { lost, unfinished, doubled, ranTwice, succeededUnseen, wrongOverlapSkips } = report;
  expect({ lost, unfinished, doubled, ranTwice, succeededUnseen, wrongOverlapSkips }).toEqual({
    lost: [],
    unfinished: [],
    doubled: [],
    ranTwice: [],
    succeededUnseen: [],
    wrongOverlapSkips: [],
  });
  expect(report.invoked).toBe(report.byStatus.succeeded ?? 0);
}

/**
 * Every slot of the report ran and succeeded once — or, under the default overlap policy (`skip`),
 * was skipped because the run before it was still in progress at the slot's own time (a 50 ms
 * webhook's run can outlast a second on a loaded machine; which slots is the machine's doing, that
 * each one is explained is the scheduler's). A backlog's slot skipped, a slot lost or run twice fails.
 */
export function expectEverySlotSucceeded(report: SlotReport): void {
  expectEveryPromiseKept(report);
  const { succeeded = 0, 'skipped:overlap': overlapped = 0, ...other } = report.byStatus;
  expect(other).toEqual({});
  expect(succeeded + overlapped).toBe(report.expected);
  expect(report.invoked).toBe(succeeded);
}
