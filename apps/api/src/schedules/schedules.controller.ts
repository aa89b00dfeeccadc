import { Controller } from '@nestjs/common';
import { PREVIEW_DEFAULT, type PreviewRequest, type PreviewResponse, routes } from '@punctual/contract';
import { CalendarsService, previewSchedule } from '@punctual/tasks';
import { Route, ValidBody } from '../http/route.decorator.js';

@Controller()
export class SchedulesController {
  constructor(private readonly calendars: CalendarsService) {}

  @Route(routes.previewSchedule)
  async preview(@ValidBody(routes.previewSchedule) body: PreviewRequest): Promise<PreviewResponse> {
    const calendars = await this.calendars.byNames(body.schedule.exclude ?? []);
    return {
      fireTimes: previewSchedule(
        body.schedule,
        body.from ? new Date(body.from) : new Date(),
        body.count ?? PREVIEW_DEFAULT,
        'preview',
        calendars,
      ),
    };
  }
}
