import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ExecutionsQueue } from '@punctual/queue';
import type express from 'express';
import { BrowserSessions } from './browser-sessions.js';

export const BOARD_PATH = '/admin/queues';

/**
 * Bull Board at `/admin/queues`, admin only — pages, assets and its own API alike: an admin bearer
 * key, or the session cookie a browser gets at `/admin/login`.
 */
export function mountBullBoard(app: NestExpressApplication, sessions: BrowserSessions): void {
  const board = new ExpressAdapter();
  board.setBasePath(BOARD_PATH);
  createBullBoard({ queues: [new BullMQAdapter(app.get(ExecutionsQueue).queue)], serverAdapter: board });
  const http = app.getHttpAdapter().getInstance() as express.Express;
  http.use(BOARD_PATH, sessions.require('admin'), board.getRouter());
}
