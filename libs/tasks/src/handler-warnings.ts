import type { WorkerDirectory } from '@punctual/cluster';

/**
 * Warnings for handlers no live worker offers: the task is stored all the same (a worker may be
 * deploying), but its runs would wait. Empty when every handler is offered.
 */
export async function missingHandlerWarnings(
  directory: WorkerDirectory,
  handlers: Iterable<string>,
): Promise<string[]> {
  const offered = new Set((await directory.handlers()).map((h) => h.name));
  return [...new Set(handlers)]
    .filter((name) => !offered.has(name))
    .map((name) => `no live worker offers handler "${name}"`);
}
