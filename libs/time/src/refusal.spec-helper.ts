import { InvalidScheduleError } from './errors.js';

/** The InvalidScheduleError `run` throws; fails the test when it throws nothing or something else. */
export function refusal(run: () => unknown): InvalidScheduleError {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidScheduleError) return error;
    throw error;
  }
  throw new Error('expected an InvalidScheduleError');
}
