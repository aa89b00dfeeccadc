import { inject } from 'vitest';
import { openSandbox, type Sandbox } from './sandbox.js';

export type { Sandbox } from './sandbox.js';

/** A sandbox cloned from the run's migrated template database (see global-setup.ts). */
export async function createSandbox(): Promise<Sandbox> {
  return openSandbox(inject('templateDatabase'));
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The migrated template database of this run (global-setup.ts). */
    templateDatabase: string;
  }
}
