import { Controller } from '@nestjs/common';
import { PREVIEW_DEFAULT, type PreviewRequest, type PreviewResponse, routes } from '@punctual/contract';
import { previewSchedule } from '@punctual/tasks';
import { Route, ValidBody } from '../http/route.decorator.js';

@Controller()
export class SchedulesController {
  @Route(routes.previewSchedule)
  preview(@ValidBody(routes.previewSchedule) body: PreviewRequest): PreviewResponse {
    return { fireTimes: previewSchedule(body.schedule, body.from ? new Date(body.from) : new Date(), body.count ?? PREVIEW_DEFAULT) };
  }
}
