import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { PunctualWorkerModule } from '@punctual/worker';
import { GreetingsService } from './greetings.service.js';
import { SendGreetingHandler } from './send-greeting.handler.js';

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    PunctualWorkerModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        databaseUrl: config.getOrThrow<string>('DATABASE_URL'),
        redisUrl: config.getOrThrow<string>('REDIS_URL'),
        redisPrefix: config.get<string>('REDIS_PREFIX'),
        concurrency: Number(config.get('WORKER_CONCURRENCY', 10)),
        leaseMs: config.get<string>('LEASE_MS') === undefined ? undefined : Number(config.get('LEASE_MS')),
      }),
    }),
  ],
  providers: [GreetingsService, SendGreetingHandler],
})
export class AppModule {}
