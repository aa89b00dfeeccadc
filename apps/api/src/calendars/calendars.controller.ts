import { Controller, Param, Res } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import {
  type Calendar,
  type CalendarDays,
  type CalendarList,
  type CalendarPutBody,
  routes,
  type WrittenCalendar,
} from '@punctual/contract';
import type { z } from 'zod';
import { CalendarsService, presentCalendar } from '@punctual/tasks';
import type { Response } from 'express';
import { CurrentPrincipal } from '../auth/roles.js';
import { Route, ValidBody, ValidQuery } from '../http/route.decorator.js';
import { dryRunOf } from '../tasks/tasks.controller.js';

@Controller()
export class CalendarsController {
  constructor(private readonly calendars: CalendarsService) {}

  @Route(routes.listCalendars)
  async list(): Promise<CalendarList> {
    return { items: (await this.calendars.list()).map(presentCalendar) };
  }

  @Route(routes.getCalendar)
  async get(@Param('name') name: string): Promise<Calendar> {
    return presentCalendar(await this.calendars.get(name));
  }

  @Route(routes.calendarDays)
  async days(
    @Param('name') name: string,
    @ValidQuery(routes.calendarDays) query: z.output<typeof routes.calendarDays.query>,
  ): Promise<CalendarDays> {
    return this.calendars.days(name, query.year);
  }

  @Route(routes.putCalendar)
  async put(
    @Param('name') name: string,
    @ValidBody(routes.putCalendar) body: CalendarPutBody,
    @ValidQuery(routes.putCalendar) query: z.output<typeof routes.putCalendar.query>,
    @CurrentPrincipal() actor: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<WrittenCalendar> {
    const dryRun = dryRunOf(query);
    const { calendar, created, changes } = await this.calendars.put(name, body, actor, dryRun);
    if (dryRun) return { ...presentCalendar(calendar), dryRun: true, changes };
    res.status(created ? 201 : 200);
    return presentCalendar(calendar);
  }

  @Route(routes.deleteCalendar)
  async remove(@Param('name') name: string, @CurrentPrincipal() actor: Principal): Promise<void> {
    await this.calendars.delete(name, actor);
  }
}
