import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadConfigOrExit } from '@punctual/config';
import { startApp } from '@punctual/bootstrap';
import { SchedulerModule } from './scheduler.module.js';

const config = loadConfigOrExit();
const app = await NestFactory.create(SchedulerModule.forRoot(config), { bufferLogs: true });
await startApp(app, config.healthPort, config.host);
