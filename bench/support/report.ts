/** One line of the results table. */
export interface Row {
  scenario: string;
  measure: string;
  punctual: string;
  peer: string;
  /** Punctual ÷ peer, when both are numbers of the same kind. */
  ratio: string;
  target: string;
  /** Whether the target is met; null when the row has no target. */
  met: boolean | null;
}

/** What a scenario hands back: its table rows, its raw figures, and any broken promise. */
export interface ScenarioOutcome {
  rows: Row[];
  data: unknown;
  /** Correctness problems (a lost or doubled slot, an unfinished run): any of them fails the run. */
  problems: string[];
}

export const ratio = (punctual: number, peer: number) =>
  Number.isFinite(punctual) && Number.isFinite(peer) && peer !== 0 ? `${(punctual / peer).toFixed(2)}×` : '—';

/** The table as GitHub Markdown (the README's Performance section). */
export function markdownTable(rows: Row[]): string {
  const lines = [
    '| scenario | measure | Punctual | peer, same run | ratio | target | met |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of rows)
    lines.push(
      `| ${r.scenario} | ${r.measure} | ${r.punctual} | ${r.peer} | ${r.ratio} | ${r.target} | ${r.met === null ? '—' : r.met ? 'yes' : '**no**'} |`,
    );
  return lines.join('\n');
}

/** The table for a terminal. */
export function textTable(rows: Row[]): string {
  const header: Row = {
    scenario: 'scenario',
    measure: 'measure',
    punctual: 'Punctual',
    peer: 'peer, same run',
    ratio: 'ratio',
    target: 'target',
    met: null,
  };
  const cells = (r: Row) => [
    r.scenario,
    r.measure,
    r.punctual,
    r.peer,
    r.ratio,
    r.target,
    r === header ? 'met' : r.met === null ? '—' : r.met ? 'yes' : 'NO',
  ];
  const all = [header, ...rows].map(cells);
  const widths = all[0]!.map((_, i) => Math.max(...all.map((c) => c[i]!.length)));
  return all.map((c) => c.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')).join('\n');
}
