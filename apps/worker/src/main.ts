import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadConfigOrExit } from '@punctual/config';
import { startApp } from '@punctual/bootstrap';
import { WorkerModule } from './worker.module.js';

const config = loadConfigOrExit();
const app = await NestFactory.create(WorkerModule.forRoot(config), { bufferLogs: true });
await startApp(app, config.healthPort, config.host);
