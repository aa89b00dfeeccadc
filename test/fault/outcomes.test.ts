/**
 * The fault tests that judge outcomes and counts only — every slot once, the work per run — never
 * how long something took, one after another in this file, the heaviest (the quick benchmark,
 * itself two processes) last, when timed.test.ts beside it is done or nearly. It runs beside
 * timed.test.ts (see there). To run one, filter by its name: `npx vitest run test/fault/outcomes.test.ts -t chaos`.
 */
import './redis-flush.fault.js';
import './postgres-kill.fault.js';
import './outbox.fault.js';
import './slow-claim.fault.js';
import './backlog-cost.fault.js';
import './edits.fault.js';
import './timeline.fault.js';
import './breaker.fault.js';
import './database-blink.fault.js';
import './chaos.fault.js';
import './bench-quick.fault.js';
