import type { ApplyAction, FieldChange, Task, TaskApplyResponse, TaskChanges } from '@punctual/contract';

/** What a secret value is shown as. */
export const MASK = '•••';

/** Rows under a header, each column as wide as its widest cell (the last one left ragged). */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** An instant in `zone`, with its offset: `2026-03-29 09:00:00+02:00`. */
export function inZone(iso: string, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    })
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
/**
 * What a change does to a task's fire times and planned runs, in indented lines under its diff: the
 * slots it moves, drops and adds (the next 20 compared), its planned runs withdrawn or re-timed, and
 * its warnings. Nothing when the fire times stay as they are.
 */
export function effectLines(effects: TaskChanges): string[] {
  const lines: string[] = [];
  const times = (list: { local: string }[]) =>
    list.map((f) => f.local.replace('T', ' ').replace(/\.000/, '')).join(', ');
  const parts = [
    effects.moved.length
      ? `${effects.moved.length} moved (${times([effects.moved[0]!.from])} → ${times([effects.moved[0]!.to])}${effects.moved.length > 1 ? ', …' : ''})`
      : '',
    effects.removed.length
      ? `${effects.removed.length} dropped (${times(effects.removed.slice(0, 1))}${effects.removed.length > 1 ? ', …' : ''})`
      : '',
    effects.added.length
      ? `${effects.added.length} added (${times(effects.added.slice(0, 1))}${effects.added.length > 1 ? ', …' : ''})`
      : '',
  ].filter(Boolean);
  if (parts.length) lines.push(`    next ${effects.fireTimes.before.length} fire times: ${parts.join(', ')}`);
  const { withdrawn, retimed } = effects.pending;
  if (withdrawn.length || retimed.length)
    lines.push(`    planned runs: ${withdrawn.length} withdrawn, ${retimed.length} re-timed`);
  for (const warning of effects.warnings) lines.push(`    warning: ${warning}`);
  return lines;
}

export function diffText(result: TaskApplyResponse, mode: 'apply' | 'plan'): string {
  const itemLines = (
    items: readonly { name: string; action: ApplyAction; changes: FieldChange[]; effects?: TaskChanges }[],
    kind: string,
  ) =>
    items.flatMap((item) => {
      const effects = item.effects ? effectLines(item.effects) : [];
      // A new task's fire times are all new: only its warnings are worth a line.
      if (item.action === 'create')
        return [`+ create ${kind}${item.name}`, ...effects.filter((line) => line.startsWith('    warning:'))];
      if (item.action === 'delete') return [`- delete ${kind}${item.name}`];
      if (item.action === 'update')
        return [`~ update ${kind}${item.name}: ${item.changes.map(changeText).join(', ')}`, ...effects];
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
