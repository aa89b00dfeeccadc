import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { loadConfigOrExit } from '@punctual/config';
import { startApp } from '@punctual/observability';
import { resolveAdminKey } from './admin-key.js';
import { ApiModule } from './api.module.js';

const config = loadConfigOrExit();
const adminKey = resolveAdminKey(config);
const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot(config, adminKey), { bufferLogs: true, bodyParser: false });
app.useBodyParser('json', { limit: '256kb' });
await startApp(app, config.port);
