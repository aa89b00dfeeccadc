import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { Config } from '@punctual/config';
import { BATCH_BODY_MAX_BYTES, BODY_MAX_BYTES, JSON_MAX_DEPTH, routes } from '@punctual/contract';
import cookieParser from 'cookie-parser';
import express from 'express';
import { BrowserSessions } from './admin/browser-sessions.js';
import { mountBullBoard } from './admin/bull-board.js';
import { ApiModule } from './api.module.js';
import { mountConsole } from './console/console.js';
import { ConsoleFiles } from './console/console-files.js';
import { limitJsonDepth } from './http/json-depth.js';
import { openApiDocument } from './http/openapi.js';
import { expressPath } from './http/route.decorator.js';
import { StorableTextPipe } from './http/storable-text.pipe.js';

/**
 * Builds the API application: body limits, the console at / (DESIGN §13), OpenAPI at /docs (JSON
 * at /docs-json) and Bull Board at /admin/queues, the last three behind a key or a browser session.
 */
export async function createApiApp(config: Config, options: { logger?: false } = {}): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot(config), {
    bufferLogs: options.logger !== false,
    logger: options.logger,
    bodyParser: false,
  });
  // A batch of a thousand tasks needs more room than one task; body-parser skips a parsed body.
  app.use(
    [expressPath(routes.batchTasks.path), expressPath(routes.applyTasks.path)],
    express.json({ limit: BATCH_BODY_MAX_BYTES }),
  );
  app.useBodyParser('json', { limit: BODY_MAX_BYTES });
  app.use(limitJsonDepth(JSON_MAX_DEPTH));
  // Before every other pipe: a NUL or half a character in any request string is a 422, never a failed write.
  app.useGlobalPipes(new StorableTextPipe());
  app.set('trust proxy', 'loopback');
  // Sessions are read from the cookie by the browser pages and, for the console, by the API guard.
  app.use(cookieParser());
  const files = ConsoleFiles.locate();
  const sessions = new BrowserSessions(app, files);
  mountConsole(app, sessions, files);
  const http = app.getHttpAdapter().getInstance() as express.Express;
  http.use(['/docs', '/docs-json', '/docs-yaml'], sessions.require('viewer'));
  SwaggerModule.setup('docs', app, openApiDocument() as unknown as OpenAPIObject);
  mountBullBoard(app, sessions);
  return app;
}
