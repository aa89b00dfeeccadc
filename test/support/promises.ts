import { expect } from 'vitest';
import type { SlotReport } from './cluster.js';

/**
 * DESIGN §1 over every slot of a report: none lost, none left unfinished, none succeeded twice,
 * no handler called twice for one slot, no success recorded that the handler's webhook never saw.
 */
export function expectEveryPromiseKept(report: SlotReport): void {
  const { lost, unfinished, doubled, ranTwice, succeededUnseen } = report;
  expect({ lost, unfinished, doubled, ranTwice, succeededUnseen }).toEqual({ lost: [], unfinished: [], doubled: [], ranTwice: [], succeededUnseen: [] });
}
