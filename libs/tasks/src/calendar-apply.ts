import type { CalendarApplyItem, CalendarSpec, FieldChange } from '@punctual/contract';
import type { Calendar, CalendarFields } from '@punctual/db';
import { calendarFields } from './calendars.service.js';
import { InvalidBatchError, InvalidTaskError } from './errors.js';

/** A calendar a file declares, checked and as it would be stored. */
export type DesiredCalendar = CalendarFields & { name: string };

const COMPARED = ['description', 'timezone', 'dates', 'rrules', 'managedBy'] as const;

/**
 * The calendars of an apply, checked: each name once, every field readable (422 naming
 * `calendars[i].…`), each managed by the apply's manager. One error lists every bad item.
 */
export function desiredCalendars(specs: CalendarSpec[], managedBy: string): DesiredCalendar[] {
  const errors: InvalidBatchError['items'] = [];
  const seen = new Map<string, number>();
  const desired = specs.map((spec, index) => {
    const prefix = `calendars[${index}].`;
    if (seen.has(spec.name)) errors.push({ field: `${prefix}name`, message: `${prefix}name "${spec.name}" is also calendars[${seen.get(spec.name)}]`, code: 'duplicate_name' });
    seen.set(spec.name, index);
    if (spec.managedBy != null && spec.managedBy !== managedBy) {
      errors.push({ field: `${prefix}managedBy`, message: `${prefix}managedBy must be "${managedBy}", the apply's manager, or left out`, code: 'managed_by_mismatch' });
    }
    try {
      return { name: spec.name, ...calendarFields({ ...spec, managedBy }, prefix) };
    } catch (error) {
      if (!(error instanceof InvalidTaskError)) throw error;
      errors.push({ field: error.field, message: error.message, code: error.code });
      return null;
    }
  });
  if (errors.length) throw new InvalidBatchError(errors);
  return desired as DesiredCalendar[];
}

/**
 * What makes the calendars `managedBy` manages what the file declares, as tasks are diffed: create
 * the absent, update the ones that differ, with `prune` delete the managed ones not declared; a
 * declared calendar that exists under another manager (or none) is reported in `notManaged`.
 */
export function diffCalendars(desired: DesiredCalendar[], current: Calendar[], managedBy: string, prune: boolean): { items: Omit<CalendarApplyItem, 'version'>[]; notManaged: { index: number; name: string; managedBy: string | null }[] } {
  const byName = new Map(current.map((c) => [c.name, c]));
  const items: Omit<CalendarApplyItem, 'version'>[] = [];
  const notManaged: { index: number; name: string; managedBy: string | null }[] = [];
  desired.forEach((calendar, index) => {
    const existing = byName.get(calendar.name);
    if (!existing) return items.push({ name: calendar.name, action: 'create', changes: [] });
    if (existing.managedBy !== managedBy) return notManaged.push({ index, name: calendar.name, managedBy: existing.managedBy });
    const changes: FieldChange[] = COMPARED.filter((f) => JSON.stringify(existing[f]) !== JSON.stringify(calendar[f])).map((f) => ({ field: f, before: existing[f], after: calendar[f], secret: false }));
    items.push({ name: calendar.name, action: changes.length ? 'update' : 'unchanged', changes });
  });
  if (prune) {
    const declared = new Set(desired.map((c) => c.name));
    for (const c of current) if (c.managedBy === managedBy && !declared.has(c.name)) items.push({ name: c.name, action: 'delete', changes: [] });
  }
  return { items, notManaged };
}
