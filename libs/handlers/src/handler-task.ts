import type { Task } from '@punctual/db';
import { signBody } from './http/signed-request.js';
import { redactor } from './http/secret-scrubber.js';

/** The task as a handler sees it: every field but its signing secret, which stays with the runner. */
export type HandlerTask = Omit<Task, 'secret'>;

/**
 * Signs what a handler sends with its task's secret, without handing the secret out: the value of
 * `X-Punctual-Signature` for the exact bytes sent.
 */
export interface RequestSigner {
  (bytes: Buffer | string): string;
  /** `text` with the secret blanked out: a receiver that echoes it back must not put it in an error or a log. */
  redact(text: string): string;
}

/** The view of `task` a handler gets (a copy without the secret). */
export function handlerTaskOf(task: Task): HandlerTask {
  const { secret: _secret, ...view } = task;
  return view;
}

/** A {@link RequestSigner} over HMAC-SHA256 with `secret` (`sha256=<hex>`). */
export function hmacSigner(secret: string): RequestSigner {
  return Object.assign((bytes: Buffer | string) => signBody(bytes, secret), { redact: redactor([secret]) });
}
