/**
 * The fault tests that time what they judge — a failover within the lease, a misfire at maxDelay,
 * an abort before the lease ends — one after another in this file, in the order below. Beside it
 * runs outcomes.test.ts (vitest's two workers: one file each), so the suite's length is the
 * longer of the two, not their sum. Each test starts the processes it breaks; to run one, filter
 * by its name: `npx vitest run test/fault/timed.test.ts -t "leader is kill"`.
 */
import './leader-kill.fault.js';
import './leader-pause.fault.js';
import './leader-frozen.fault.js';
import './clock-skew.fault.js';
import './network-faults.fault.js';
import './worker-faults.fault.js';
import './flow-control.fault.js';
import './downtime-misfire.fault.js';
import './shards.fault.js';
// Judged by counts, last: it runs while outcomes.test.ts ends with its heaviest tests.
import './pgbouncer.fault.js';
