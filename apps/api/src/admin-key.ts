import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { type Config, ConfigError } from '@punctual/config';
import { ApiKeysService } from '@punctual/auth';
import { newDevelopmentKey } from './development-key.js';

/**
 * In development without `ADMIN_API_KEY`, a key is generated and printed once, so a first run
 * works without set-up (`npm start` makes the key itself and shows it in its banner; this is for
 * the API started alone). Elsewhere the config is returned as it is.
 */
export function withDevelopmentKey(config: Config): Config {
  if (config.adminApiKey || config.nodeEnv !== 'development') return config;
  const key = newDevelopmentKey();
  process.stdout.write(
    `\nNo ADMIN_API_KEY set (NODE_ENV=development). Generated admin key, shown once:\n\n  ${key}\n\n`,
  );
  return Object.freeze({ ...config, adminApiKey: key });
}

/** The API refuses to start when no key could ever authenticate (none in the environment or stored). */
@Injectable()
export class ApiKeyPresenceCheck implements OnApplicationBootstrap {
  constructor(private readonly keys: ApiKeysService) {}

  async onApplicationBootstrap(): Promise<void> {
    if (await this.keys.anyConfigured()) return;
    throw new ConfigError(
      'Invalid configuration: ADMIN_API_KEY is required (no API key exists) unless NODE_ENV=development',
    );
  }
}
