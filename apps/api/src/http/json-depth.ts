import type { NextFunction, Request, Response } from 'express';
import { errorEnvelope } from './api-error.js';

/**
 * Refuses JSON bodies nested deeper than `maxDepth` before anything walks them recursively
 * (validation, transformation): deep nesting is a cheap way to exhaust the stack.
 */
export function limitJsonDepth(maxDepth: number) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (depthExceeds(req.body, maxDepth)) {
      res.status(400).json(errorEnvelope('too_deep', `JSON nested deeper than ${maxDepth} levels`));
      return;
    }
    next();
  };
}

function depthExceeds(root: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= maxDepth) return true;
    for (const child of Object.values(value as object)) stack.push([child, depth + 1]);
  }
  return false;
}
