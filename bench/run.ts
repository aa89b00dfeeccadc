import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cronParserDisagreements } from './cron-parser-dst.js';
import { benchScheduleMath } from './schedule-math.js';

/** `npm run bench [-- --quick]`: the scenarios, printed as a table and written to bench/results/latest.json. */
const quick = process.argv.includes('--quick');
const math = await benchScheduleMath({ quick });
const rows = [
  ['schedule math (µs/slot)', math.punctualUsPerSlot.toFixed(2), `cron-parser ${math.cronParserUsPerSlot.toFixed(2)}`, (math.punctualUsPerSlot / math.cronParserUsPerSlot).toFixed(3), '≤ 5 µs'],
];
const zones = quick ? [] : cronParserDisagreements();
console.table(rows.map(([measure, punctual, peer, ratio, target]) => ({ measure, punctual, peer, ratio, target })));
if (!quick) console.log(`cron-parser alone disagrees with the DST rule in ${zones.length} zones: ${zones.join(', ')}`);
const out = fileURLToPath(new URL('../../bench/results/latest.json', import.meta.url));
mkdirSync(fileURLToPath(new URL('../../bench/results', import.meta.url)), { recursive: true });
writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), quick, scheduleMath: math, cronParserDisagreements: zones }, null, 2));
