import { Controller } from '@nestjs/common';
import { PREVIEW_DEFAULT, type PreviewRequest, type PreviewResponse, qualifiedName, routes } from '@punctual/contract';
import { CalendarsService, previewSchedule } from '@punctual/tasks';
import { CurrentNamespace } from '../auth/roles.js';
import { Route, ValidBody } from '../http/route.decorator.js';

@Controller()
export class SchedulesController {
  constructor(private readonly calendars: CalendarsService) {}

  @Route(routes.previewSchedule)
  async preview(
    @ValidBody(routes.previewSchedule) body: PreviewRequest,
    @CurrentNamespace() namespace: string,
  ): Promise<PreviewResponse> {
    // The calendars of the request's namespace: the schedule names them as a task of it would.
    const exclude = body.schedule.exclude?.map((name) => qualifiedName(namespace, name));
    const calendars = await this.calendars.byNames(exclude ?? []);
    return {
      fireTimes: previewSchedule(
        exclude ? { ...body.schedule, exclude } : body.schedule,
        body.from ? new Date(body.from) : new Date(),
        body.count ?? PREVIEW_DEFAULT,
        'preview',
        calendars,
      ),
    };
  }
}
