import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';

/** One of the app's own services: composes a greeting and posts it to a webhook. */
@Injectable()
export class GreetingsService {
  constructor(private readonly config: ConfigService) {}

  compose(to: string): string {
    return `${this.config.get('GREETING', 'Hello')}, ${to}!`;
  }

  /** Posts `text`; a refusal (non-2xx) throws, so Punctual retries the attempt under the task's policy. */
  async post(webhook: string, text: string, headers: Record<string, string>, signal: AbortSignal): Promise<number> {
    const response = await fetch(webhook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ text }),
      signal,
    });
    if (!response.ok) throw new Error(`webhook answered ${response.status}`);
    return response.status;
  }
}
