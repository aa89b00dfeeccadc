import { expect } from 'vitest';
import type { SlotReport } from './cluster.js';

/**
 * DESIGN §1 over every slot of a report, counted as a user counts it (calls of the tasks' webhook):
 * none lost, none left unfinished, none succeeded twice, no handler called twice for one slot, no
 * success recorded that the webhook never saw, and no webhook call answered 2xx for a slot that did
 * not end succeeded.
 */
export function expectEveryPromiseKept(report: SlotReport): void {
  const { lost, unfinished, doubled, ranTwice, succeededUnseen } = report;
  expect({ lost, unfinished, doubled, ranTwice, succeededUnseen }).toEqual({ lost: [], unfinished: [], doubled: [], ranTwice: [], succeededUnseen: [] });
  expect(report.invoked).toBe(report.byStatus.succeeded ?? 0);
}
