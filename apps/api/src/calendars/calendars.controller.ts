import { Controller, Param, Res } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import {
  bareName,
  type Calendar,
  type CalendarDays,
  type CalendarList,
  CALENDAR_NAME_PATTERN,
  type CalendarPutBody,
  routes,
  type WrittenCalendar,
} from '@punctual/contract';
import type { z } from 'zod';
import { CalendarsService, presentCalendar } from '@punctual/tasks';
import type { Response } from 'express';
import { CurrentNamespace, CurrentPrincipal } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { keyOf } from '../http/names.js';
import { Route, ValidBody, ValidQuery } from '../http/route.decorator.js';
import { dryRunOf } from '../tasks/tasks.controller.js';

/** Calendars of the request's namespace, each stored under its key (`qualifiedName`). */
@Controller()
export class CalendarsController {
  constructor(private readonly calendars: CalendarsService) {}

  @Route(routes.listCalendars)
  async list(@CurrentNamespace() namespace: string): Promise<CalendarList> {
    return { items: (await this.calendars.list(namespace)).map(presentCalendar) };
  }

  @Route(routes.getCalendar)
  async get(@Param('name') name: string, @CurrentNamespace() namespace: string): Promise<Calendar> {
    return presentCalendar(await this.calendars.get(keyOf(namespace, name, 'calendar')));
  }

  @Route(routes.calendarDays)
  async days(
    @Param('name') name: string,
    @CurrentNamespace() namespace: string,
    @ValidQuery(routes.calendarDays) query: z.output<typeof routes.calendarDays.query>,
  ): Promise<CalendarDays> {
    return this.calendars.days(keyOf(namespace, name, 'calendar'), query.year);
  }

  @Route(routes.putCalendar)
  async put(
    @Param('name') name: string,
    @CurrentNamespace() namespace: string,
    @ValidBody(routes.putCalendar) body: CalendarPutBody,
    @ValidQuery(routes.putCalendar) query: z.output<typeof routes.putCalendar.query>,
    @CurrentPrincipal() actor: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<WrittenCalendar> {
    const dryRun = dryRunOf(query);
    if (!CALENDAR_NAME_PATTERN.test(name)) {
      const message = `name must match ${CALENDAR_NAME_PATTERN.source}`;
      throw new ApiError(422, 'invalid_name', message, [{ field: 'name', message }]);
    }
    const key = keyOf(namespace, name, 'calendar');
    const { calendar, created, changes } = await this.calendars.put(key, body, actor, dryRun);
    if (dryRun) {
      const byTask = changes && Object.fromEntries(Object.entries(changes).map(([task, c]) => [bareName(task), c]));
      return { ...presentCalendar(calendar), dryRun: true, changes: byTask };
    }
    res.status(created ? 201 : 200);
    return presentCalendar(calendar);
  }

  @Route(routes.deleteCalendar)
  async remove(
    @Param('name') name: string,
    @CurrentNamespace() namespace: string,
    @CurrentPrincipal() actor: Principal,
  ): Promise<void> {
    await this.calendars.delete(keyOf(namespace, name, 'calendar'), actor);
  }
}
