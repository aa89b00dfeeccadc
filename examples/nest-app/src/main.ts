import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

// A worker needs no HTTP server: an application context runs the module. On SIGTERM or SIGINT the
// app closes — it stops taking executions, lets running handlers finish, hands back the rest — and
// the process exits 0.
const app = await NestFactory.createApplicationContext(AppModule);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(
    signal,
    () =>
      void app.close().then(
        () => process.exit(0),
        () => process.exit(1),
      ),
  );
}
