/** A task as the API receives it (already shape-checked); see DESIGN §7 for the JSON. */
export interface TaskInput {
  name: string;
  description?: string | null;
  handler: string;
  payload?: unknown;
  secretFields?: string[];
  schedule: ScheduleInput;
  policy?: PolicyInput;
  notify?: { url?: string | null; on?: string[] };
  paused?: boolean;
}

export interface ScheduleInput {
  cron?: string;
  rrule?: string;
  at?: string;
  every?: string | number;
  timezone?: string;
  startAt?: string | null;
  endAt?: string | null;
  jitter?: string | number;
  dst?: { gap?: 'shift' | 'skip' | 'end'; overlap?: 'first' | 'last' | 'both' };
  disambiguation?: 'earlier' | 'later' | 'compatible';
}

export interface PolicyInput {
  overlap?: 'skip' | 'allow' | 'buffer_one' | 'replace';
  misfire?: 'run_once' | 'skip' | 'run_all';
  maxDelay?: string | number;
  retry?: { attempts?: number; backoff?: string | number; maxBackoff?: string | number };
  timeout?: string | number;
}

/** The name rule of DESIGN §3: the key in URLs. */
export const TASK_NAME = /^[a-z0-9][a-z0-9._-]{0,127}$/;
