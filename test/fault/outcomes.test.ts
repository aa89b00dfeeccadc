/**
 * The fault tests that judge outcomes and counts only — every slot once, the work per run — never
 * how long something took, one after another in this file. It runs beside timed.test.ts (see
 * there); the two are about the same length. (The quick benchmark, two processes for three
 * minutes, is in `npm run test:long`.) To run one, filter by its name: `npx vitest run test/fault/outcomes.test.ts -t chaos`.
 */
import './redis-flush.fault.js';
import './postgres-kill.fault.js';
import './outbox.fault.js';
import './slow-claim.fault.js';
import './backlog-cost.fault.js';
import './backlog-failover.fault.js';
import './edits.fault.js';
import './timeline.fault.js';
import './breaker.fault.js';
import './database-blink.fault.js';
import './chaos.fault.js';
import './redis-topologies.fault.js';
