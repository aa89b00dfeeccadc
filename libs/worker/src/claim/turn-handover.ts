import { Injectable, Logger } from '@nestjs/common';
import { type HandedTurn, TurnsRepository } from '@punctual/db';
import { Metrics } from '@punctual/metrics';
import { ExecutionsQueue } from '@punctual/queue';
import { Batcher } from '../batcher.js';
import { BATCHES_IN_FLIGHT } from './claim-batches.js';

/** Jobs of handed turns pushed per `addBulk`. */
const PUSH_BATCH = 500;

/**
 * The worker's half of a hand-over (DESIGN §5): the statement that records the end of a run hands
 * the task's next parked slot its turn; this pushes that slot's job (at the head of the queue,
 * several hand-overs in one `addBulk`), and hands over again where the end's own statement began
 * before a park it was told of committed. Best effort: a turn handed whose job never made it to the
 * queue is a pending row without a job (the relay pushes it again), a task whose hand-over failed
 * keeps its slot parked (the relay hands it on).
 */
@Injectable()
export class TurnHandover {
  private readonly logger = new Logger(TurnHandover.name);
  private readonly pushes: Batcher<HandedTurn, undefined>;

  constructor(
    private readonly turns: TurnsRepository,
    queue: ExecutionsQueue,
    private readonly metrics: Metrics,
  ) {
    this.pushes = new Batcher(
      async (handed) => {
        await queue.pushTurns(handed);
        return handed.map(() => undefined);
      },
      null,
      PUSH_BATCH,
      BATCHES_IN_FLIGHT,
    );
  }

  /** After ends were recorded: pushes the turns they handed, and hands over again for `waited` tasks (see RecordedSuccesses). */
  async afterEnds(handed: HandedTurn[], waited: string[] = []): Promise<void> {
    const again = waited.length ? await this.handOver(waited) : [];
    await this.push([...handed, ...again]);
  }

  /** Hands the next parked slot of each task its turn (an end recorded without the hand-over in its statement), and pushes its job. */
  async handOverAndPush(taskIds: string[]): Promise<void> {
    await this.push(await this.handOver(taskIds));
  }

  private async handOver(taskIds: string[]): Promise<HandedTurn[]> {
    try {
      return await this.turns.handOver(taskIds);
    } catch (error) {
      this.logger.warn({ err: error, tasks: taskIds.length }, 'could not hand the turn on; the relay hands it on');
      return [];
    }
  }

  private async push(handed: HandedTurn[]): Promise<void> {
    if (handed.length === 0) return;
    this.metrics.turnsHanded.inc({ by: 'end' }, handed.length);
    await Promise.all(
      handed.map((turn) =>
        this.pushes
          .run(turn)
          .catch((error: unknown) =>
            this.logger.warn(
              { err: error, executionId: turn.id },
              'could not push the job of a slot handed its turn; the relay pushes it again',
            ),
          ),
      ),
    );
  }
}
