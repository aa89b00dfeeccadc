/**
 * The rows of `task_execution` (and of `execution_event`) that can still change: every execution
 * that is planned, queued, running or between attempts has a slot at or after the live horizon,
 * and these views are the table from the horizon on (see history/live-horizon.repository.ts).
 * Every statement of the claim and leader paths that looks for live rows reads them through these,
 * so it plans and reads only the partitions from the horizon on — the day's, usually — however
 * many days of history the table keeps; a read of history (the API's, the timeline's) reads the
 * tables themselves, by id (the id carries its slot) or by a range of slots.
 */
export const LIVE_EXECUTIONS = 'live_execution';
export const LIVE_EVENTS = 'live_execution_event';
