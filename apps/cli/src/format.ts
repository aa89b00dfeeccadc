import type { ApplyAction, FieldChange, Task, TaskApplyResponse } from '@punctual/contract';

/** What a secret value is shown as. */
export const MASK = '•••';

/** Rows under a header, each column as wide as its widest cell (the last one left ragged). */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** An instant in `zone`, with its offset: `2026-03-29 09:00:00+02:00`. */
export function inZone(iso: string, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'longOffset' })
      .formatToParts(new Date(iso))
      .map((p) => [p.type, p.value]),
  );
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : String(parts.timeZoneName).replace('GMT', '');
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}${offset}`;
}

/** Whether `zone` is UTC under any of its names (`UTC`, `Etc/UTC`, `GMT`, `Zulu`…): its local times are the UTC ones. */
export function isUtc(zone: string): boolean {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone === 'UTC';
  } catch {
    // Not a zone this runtime knows: show it beside UTC rather than claim it is UTC.
    return false;
  }
}

/** An instant in UTC: `2026-03-29 07:00:00Z`. */
export function inUtc(iso: string): string {
  return `${new Date(iso).toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** `2026-03-29 09:00:00+02:00 Europe/Berlin (2026-03-29 07:00:00Z)`, or `-`. */
export function bothZones(iso: string | null | undefined, zone: string): string {
  if (!iso) return '-';
  return zone === 'UTC' ? inUtc(iso) : `${inZone(iso, zone)} ${zone} (${inUtc(iso)})`;
}

/** A schedule in one short phrase: `cron 0 9 * * 1-5`, `every 15m`, `at 2030-01-01T08:00:00.000Z`, `rrule FREQ=WEEKLY;BYDAY=MO`. */
export function scheduleText(schedule: Task['schedule']): string {
  if (schedule.cron !== undefined) return `cron ${schedule.cron}`;
  if (schedule.every !== undefined) return `every ${schedule.every}`;
  if (schedule.at !== undefined) return `at ${schedule.at}`;
  const rule = (schedule.rrule ?? '').split('\n').find((l) => l.startsWith('RRULE:')) ?? schedule.rrule ?? '';
  return `rrule ${rule.replace(/^RRULE:/, '')}`;
}

/** A changed field as `schedule.cron: "0 9 * * *" → "*\/5 * * * *"`; secret values as •••. */
export function changeText(change: FieldChange): string {
  const value = (v: unknown) => (v === undefined ? '(none)' : change.secret ? MASK : short(JSON.stringify(v)));
  return `${change.field}: ${value(change.before)} → ${value(change.after)}`;
}

function short(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** How many items an apply changes, and how many it leaves as they are. */
interface Counts {
  changed: number;
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
}

/** The counts of a list of apply items (the API counts the tasks; the calendars are counted here). */
export function countItems(items: readonly { action: ApplyAction }[]): Counts {
  const count = (action: ApplyAction) => items.filter((item) => item.action === action).length;
  const [created, updated, deleted] = [count('create'), count('update'), count('delete')];
  return { changed: created + updated + deleted, created, updated, deleted, unchanged: count('unchanged') };
}

/** Whether an apply changes (or, dry, would change) anything: a task or a calendar. */
export function changesAnything(result: TaskApplyResponse): boolean {
  return result.changed > 0 || countItems(result.calendars ?? []).changed > 0;
}

/**
 * The diff, one line per calendar and task changed (`+ create`, `~ update` with the fields,
 * `- delete`; a calendar's line says `calendar`), and a summary: one line, or with calendars one
 * line for the tasks and one for the calendars.
 */
export function diffText(result: TaskApplyResponse, mode: 'apply' | 'plan'): string {
  const itemLines = (items: readonly { name: string; action: ApplyAction; changes: FieldChange[] }[], kind: string) =>
    items.flatMap((item) => {
      if (item.action === 'create') return [`+ create ${kind}${item.name}`];
      if (item.action === 'delete') return [`- delete ${kind}${item.name}`];
      if (item.action === 'update') return [`~ update ${kind}${item.name}: ${item.changes.map(changeText).join(', ')}`];
      return [];
    });
  // diff and apply say it in the same words and the same shape, a plan in the future, an apply done.
  const summary = (c: Counts) =>
    mode === 'apply'
      ? `${c.changed} changed (${c.created} created, ${c.updated} updated, ${c.deleted} deleted), ${c.unchanged} unchanged`
      : `${c.changed} to change (${c.created} to create, ${c.updated} to update, ${c.deleted} to delete), ${c.unchanged} unchanged`;
  const calendars = result.calendars ?? [];
  const lines = [...itemLines(calendars, 'calendar '), ...itemLines(result.items, '')];
  if (calendars.length === 0) return [...lines, summary(result)].join('\n');
  return [...lines, `tasks: ${summary(result)}`, `calendars: ${summary(countItems(calendars))}`].join('\n');
}
