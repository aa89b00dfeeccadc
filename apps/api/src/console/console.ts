import type { NestExpressApplication } from '@nestjs/platform-express';
import type express from 'express';
import type { BrowserSessions } from '../admin/browser-sessions.js';
import type { ConsoleFiles } from './console-files.js';

/** The console's own pages; every other path under them is the API's (and 404s there). */
export const CONSOLE_PAGES = ['/', '/tasks/:name', '/calendars', '/calendars/:name', '/dead-letters', '/cluster'];

/**
 * The web console (DESIGN §13): its pages for anyone signed in (a viewer at least; a browser
 * without a session is sent to the login form and back), its assets for everyone (the login form
 * uses them, and they hold no data).
 */
export function mountConsole(app: NestExpressApplication, sessions: BrowserSessions, files: ConsoleFiles): void {
  const http = app.getHttpAdapter().getInstance() as express.Express;
  http.use('/assets', files.assets());
  http.get(
    CONSOLE_PAGES,
    sessions.require('viewer'),
    (_req, res, next) => void files.sendPage(res, 'index').catch(next),
  );
}
