import { type TaskHandlerContext, type TaskHandlerImpl, TaskHandler, UnrecoverableError } from '@punctual/worker';
import { GreetingsService } from './greetings.service.js';

interface GreetingPayload {
  to: string;
  webhook: string;
}

/** The `send-greeting` handler: a provider of this app, with this app's service injected. */
@TaskHandler('send-greeting')
export class SendGreetingHandler implements TaskHandlerImpl {
  constructor(private readonly greetings: GreetingsService) {}

  async run({ payload, execution, attempt, signal, log }: TaskHandlerContext): Promise<unknown> {
    const { to, webhook } = payload as Partial<GreetingPayload>;
    if (typeof to !== 'string' || typeof webhook !== 'string')
      throw new UnrecoverableError('payload needs "to" and "webhook"');
    const text = this.greetings.compose(to);
    const status = await this.greetings.post(webhook, text, { 'x-punctual-execution': execution.id }, signal);
    log.info('greeting sent', { to, attempt });
    return { text, status };
  }
}
