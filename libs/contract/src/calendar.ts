import { z } from 'zod';
import { TaskChanges } from './changes.js';
import { Timestamp } from './common.js';
import { CALENDAR_DATES_MAX, CALENDAR_RRULES_MAX, DESCRIPTION_MAX, RRULE_MAX, TIMEZONE_MAX } from './limits.js';
import { CalendarName, ManagedBy } from './task.js';

const CalendarDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date such as 2026-12-25');

const calendarFields = {
  description: z
    .string()
    .max(DESCRIPTION_MAX)
    .nullable()
    .optional()
    .meta({ examples: ['US federal holidays'] }),
  timezone: z
    .string()
    .min(1)
    .max(TIMEZONE_MAX)
    .nullable()
    .optional()
    .meta({
      description: "the zone whose local dates are excluded; absent or null: each task's own schedule zone",
      examples: ['America/New_York'],
    }),
  dates: z
    .array(CalendarDate)
    .max(CALENDAR_DATES_MAX)
    .meta({ description: 'excluded local dates', examples: [['2026-12-25', '2027-01-01']] }),
  rrules: z
    .array(z.string().min(1).max(RRULE_MAX))
    .max(CALENDAR_RRULES_MAX)
    .optional()
    .meta({
      description:
        'day rules whose occurrences are excluded: FREQ YEARLY, MONTHLY, WEEKLY or DAILY, counted from 1970-01-01; no DTSTART, COUNT or time of day (UNTIL bounds one)',
      examples: [['FREQ=WEEKLY;BYDAY=SA,SU', 'FREQ=YEARLY;BYMONTH=11;BYDAY=4TH']],
    }),
  managedBy: ManagedBy.nullable().optional(),
};

/** `PUT /v1/calendars/{name}`: a calendar of excluded days (DESIGN §6), replaced as a whole. */
export const CalendarPutBody = z.strictObject(calendarFields).meta({ id: 'CalendarPutBody' });
/** A calendar as a tasks-as-code file declares it (`calendars:` beside `tasks:`). */
export const CalendarSpec = z.strictObject({ name: CalendarName, ...calendarFields }).meta({ id: 'CalendarSpec' });

/** A calendar as the API returns it. */
export const Calendar = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    timezone: z.string().nullable(),
    dates: z.array(z.string()),
    rrules: z.array(z.string()),
    version: z.number().int().meta({ description: 'moves on every change' }),
    managedBy: z.string().nullable(),
    tasks: z.array(z.string()).meta({ description: 'the tasks that exclude it (a calendar in use cannot be deleted)' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Calendar' });
/** `PUT /v1/calendars/{name}`: the calendar, and on a dry run what it would do to each task that excludes it. */
export const WrittenCalendar = Calendar.extend({
  dryRun: z.literal(true).optional().meta({ description: 'present on a dry run: nothing was stored' }),
  changes: z.record(z.string(), TaskChanges).optional().meta({
    description: 'on a dry run: by task name, what the change would do to each task that excludes the calendar',
  }),
}).meta({ id: 'WrittenCalendar' });
export const CalendarList = z.object({ items: z.array(Calendar) }).meta({ id: 'CalendarList' });

/** `GET /v1/calendars/{name}/days`: the year whose days to list. */
export const CalendarDaysQuery = z.strictObject({
  year: z.coerce
    .number()
    .int()
    .min(1970)
    .max(2200)
    .optional()
    .meta({ description: 'the year whose excluded days to list (1970–2200; default: this year, UTC)' }),
});
/** Every local date of one year a calendar excludes: its dates and its rules' days. */
export const CalendarDays = z
  .object({
    name: z.string(),
    year: z.number().int(),
    timezone: z
      .string()
      .nullable()
      .meta({ description: "the zone whose local dates these are (null: each task's own)" }),
    days: z.array(z.string()).meta({ description: 'the excluded local dates of the year, `YYYY-MM-DD`, in order' }),
  })
  .meta({ id: 'CalendarDays' });

export type CalendarPutBody = z.infer<typeof CalendarPutBody>;
export type CalendarSpec = z.infer<typeof CalendarSpec>;
export type Calendar = z.infer<typeof Calendar>;
export type WrittenCalendar = z.infer<typeof WrittenCalendar>;
export type CalendarList = z.infer<typeof CalendarList>;
export type CalendarDays = z.infer<typeof CalendarDays>;
export type CalendarDaysQuery = z.input<typeof CalendarDaysQuery>;
