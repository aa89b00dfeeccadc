import type { CalendarSpec, FieldChange } from '@punctual/contract';
import type { Calendar, CalendarFields } from '@punctual/db';
import { calendarFields } from './calendars.service.js';
import { InvalidBatchError, InvalidTaskError } from './errors.js';
import { checkDistinctNames, checkManager } from './task-batch.js';
import { diffManaged, type TaskDiff } from './task-diff.js';

/** A calendar a file declares, checked and as it would be stored. */
export type DesiredCalendar = CalendarFields & { name: string };

const COMPARED = ['description', 'timezone', 'dates', 'rrules', 'managedBy'] as const;

/**
 * The calendars of an apply, checked as its tasks are: each name once, each managed by the apply's
 * manager, every field readable (422 naming `calendars[i].…`; one error lists every bad item).
 */
export function desiredCalendars(specs: CalendarSpec[], managedBy: string): DesiredCalendar[] {
  checkDistinctNames(specs, 'calendars');
  checkManager(specs, managedBy, 'calendars');
  const errors: InvalidBatchError['items'] = [];
  const desired = specs.map((spec, index) => {
    try {
      return { name: spec.name, ...calendarFields({ ...spec, managedBy }, `calendars[${index}].`) };
    } catch (error) {
      if (!(error instanceof InvalidTaskError)) throw error;
      errors.push({ field: error.field, message: error.message, code: error.code });
      return null;
    }
  });
  if (errors.length) throw new InvalidBatchError(errors);
  return desired as DesiredCalendar[];
}

/** What makes the calendars `managedBy` manages what the file declares: diffed as tasks are, field by field. */
export function diffCalendars(
  desired: DesiredCalendar[],
  current: Calendar[],
  managedBy: string,
  prune: boolean,
): TaskDiff {
  return diffManaged<DesiredCalendar>(desired, current, { managedBy, prune }, (before, after) =>
    COMPARED.filter((f) => JSON.stringify(before[f]) !== JSON.stringify(after[f])).map((f): FieldChange => ({
      field: f,
      before: before[f],
      after: after[f],
      secret: false,
    })),
  );
}
