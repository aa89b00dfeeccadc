import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Injectable } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { HandlerQueues } from '@punctual/cluster';
import { ExecutionsQueue } from '@punctual/queue';
import type express from 'express';
import { BrowserSessions } from './browser-sessions.js';

export const BOARD_PATH = '/admin/queues';

/** How old the board's list of queues may be when a page or its API is asked for. */
const QUEUES_FRESH_MS = 2_000;

/**
 * The queues Bull Board shows: the queue of every handler (see HandlerQueues) — in use by a task or
 * a run, or offered by a live worker — brought up to date when the board is asked for, at most
 * every QUEUES_FRESH_MS.
 */
@Injectable()
export class BoardQueues {
  private shown = '';

  constructor(
    private readonly queues: ExecutionsQueue,
    private readonly handlers: HandlerQueues,
  ) {}

  /** Shows the queues of today's handlers through `replace` (a read that fails keeps the list shown). */
  async refresh(replace: (queues: BullMQAdapter[]) => void): Promise<void> {
    const names = await this.handlers.handlers(QUEUES_FRESH_MS).catch(() => null);
    if (!names || names.join(',') === this.shown) return;
    this.shown = names.join(',');
    replace(names.map((name) => new BullMQAdapter(this.queues.queueFor(name))));
  }
}

/**
 * Bull Board at `/admin/queues`, admin only — pages, assets and its own API alike: an admin bearer
 * key, or the session cookie a browser gets at `/admin/login`. One queue per handler.
 */
export function mountBullBoard(app: NestExpressApplication, sessions: BrowserSessions): void {
  const board = new ExpressAdapter();
  board.setBasePath(BOARD_PATH);
  const { replaceQueues } = createBullBoard({ queues: [], serverAdapter: board });
  const queues = app.get(BoardQueues);
  const fresh: express.RequestHandler = (_req, _res, next) =>
    void queues.refresh(replaceQueues).then(() => next(), next); // a failure goes to Express's error handler
  const http = app.getHttpAdapter().getInstance() as express.Express;
  http.use(BOARD_PATH, sessions.require('admin', { wholeCluster: true }), fresh, board.getRouter());
}
