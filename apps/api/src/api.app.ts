import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { Config } from '@punctual/config';
import type express from 'express';
import { BrowserSessions } from './admin/browser-sessions.js';
import { mountBullBoard } from './admin/bull-board.js';
import { ApiModule } from './api.module.js';
import { limitJsonDepth } from './http/json-depth.js';

/** Builds the API application: body limits, OpenAPI at /docs and Bull Board at /admin/queues (both behind a key or a browser session). */
export async function createApiApp(config: Config, options: { logger?: false } = {}): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot(config), {
    bufferLogs: options.logger !== false,
    logger: options.logger,
    bodyParser: false,
  });
  app.useBodyParser('json', { limit: '256kb' });
  app.use(limitJsonDepth(64));
  app.set('trust proxy', 'loopback');
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Punctual')
      .setDescription('Scheduled work, on time, exactly once per slot. Authenticate with `Authorization: Bearer <api key>`.')
      .setVersion('1')
      .addBearerAuth()
      .build(),
  );
  const sessions = new BrowserSessions(app);
  const http = app.getHttpAdapter().getInstance() as express.Express;
  http.use(['/docs', '/docs-json', '/docs-yaml'], sessions.require('viewer'));
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs/openapi.json' });
  mountBullBoard(app, sessions);
  return app;
}
