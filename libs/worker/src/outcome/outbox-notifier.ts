import { bareName } from '@punctual/contract';
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { type Outbox, OutboxRepository, TasksRepository } from '@punctual/db';
import { BlockedDestinationError, hmacSigner, sendSigned } from '@punctual/handlers';
import { Metrics } from '@punctual/metrics';

const POLL_MS = 1_000;
const BATCH = 20;
const MAX_ATTEMPTS = 10;
const DELIVERY_TIMEOUT_MS = 10_000;

interface NotificationPayload {
  url: string;
  taskId: string;
  event: string;
  execution: Record<string, unknown>;
}

/**
 * Delivers the outbox: POSTs each message to its task's `notify.url`, signed with the task's
 * secret, `Idempotency-Key` = the outbox id, through the SSRF guard. A failure is retried with
 * exponential backoff (1 s … 1 h, 10 attempts). A notifier that dies mid-delivery holds no lock
 * after its transaction rolls back, so the message is delivered again (at least once).
 */
@Injectable()
export class OutboxNotifier implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(OutboxNotifier.name);
  private timer: NodeJS.Timeout | null = null;
  private draining: Promise<void> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly outbox: OutboxRepository,
    private readonly tasks: TasksRepository,
    private readonly metrics: Metrics,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      if (!this.draining) this.draining = this.drainOnce().finally(() => (this.draining = null));
    }, POLL_MS);
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.draining;
  }

  /** One pass over the due messages (none at all — the usual case — is one count, no transaction). */
  async drainOnce(): Promise<void> {
    try {
      let pending = await this.outbox.pendingCount();
      if (pending > 0 && (await this.outbox.drain(BATCH, (message) => this.deliver(message))) > 0)
        pending = await this.outbox.pendingCount();
      this.metrics.outboxPending.set(pending);
    } catch (error) {
      this.logger.error({ err: error }, 'outbox drain failed; retrying');
    }
  }

  private async deliver(message: Outbox) {
    const payload = message.payload as unknown as NotificationPayload;
    const task = await this.tasks.findById(payload.taskId);
    if (!task) return { ok: false as const, error: 'the task was deleted', retryInMs: null };
    try {
      const res = await sendSigned({
        url: payload.url,
        method: 'POST',
        headers: { 'x-punctual-event': message.topic },
        body: {
          id: message.id,
          topic: message.topic,
          event: payload.event,
          task: bareName(task.name),
          namespace: task.namespace,
          execution: payload.execution,
          createdAt: message.createdAt.toISOString(),
        },
        sign: hmacSigner(task.secret),
        idempotencyKey: message.id,
        timeoutMs: DELIVERY_TIMEOUT_MS,
        allowHosts: this.config.httpAllowHosts,
      });
      if (res.status >= 200 && res.status < 300) return { ok: true as const };
      return this.retry(message, `answered ${res.status}`);
    } catch (error) {
      // A refused destination stays refused: asking again cannot succeed.
      if (error instanceof BlockedDestinationError)
        return { ok: false as const, error: error.message, retryInMs: null };
      return this.retry(message, (error as Error).message);
    }
  }

  private retry(message: Outbox, error: string) {
    const attempts = message.attempts + 1;
    this.logger.warn({ outboxId: message.id, topic: message.topic, attempts, error }, 'notification not delivered');
    return {
      ok: false as const,
      error,
      retryInMs: attempts >= MAX_ATTEMPTS ? null : Math.min(3_600_000, 1000 * 2 ** (attempts - 1)),
    };
  }
}
