import type { Execution } from '@punctual/contract';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { browserZone, formatSpan } from '../format/time.js';
import { startLagMs } from './bits.js';

import { CHART_WINDOW_MS } from './chart-window.js';

type Metric = { title: string; value: (e: Execution) => number | null };
const METRICS: Metric[] = [
  { title: 'Start lag', value: startLagMs },
  { title: 'Duration', value: (e) => e.durationMs },
];

/** The status colours of the stylesheet (`--status-<status>`), so the chart and the page agree. */
function statusColour(status: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(`--status-${status}`).trim() || '#888';
}

/** Median and maximum of what is there. */
function spread(values: number[]): string {
  if (values.length === 0) return 'none';
  const sorted = [...values].sort((a, b) => a - b);
  return `median ${formatSpan(sorted[Math.floor((sorted.length - 1) / 2)]!)}, max ${formatSpan(sorted.at(-1)!)}`;
}

/** In words what the chart draws, for people who cannot see it. */
export function chartSummary(runs: Execution[]): string {
  if (runs.length === 0) return 'No runs in the last 24 hours.';
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run.status, (counts.get(run.status) ?? 0) + 1);
  const byStatus = [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
  const of = (metric: Metric) => runs.map(metric.value).filter((v): v is number => v !== null);
  return `${runs.length} runs in the last 24 hours: ${byStatus}. Start lag ${spread(of(METRICS[0]!))}; duration ${spread(of(METRICS[1]!))}.`;
}

/** One chart: a metric per run over time, one point series per status. */
function MetricChart({ metric, runs, now }: { metric: Metric; runs: Execution[]; now: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const sorted = runs.filter((r) => metric.value(r) !== null).sort((a, b) => Date.parse(a.scheduledFor) - Date.parse(b.scheduledFor));
    const statuses = [...new Set(sorted.map((r) => r.status))];
    const xs = sorted.map((r) => Date.parse(r.scheduledFor) / 1000);
    const series = statuses.map((status) => sorted.map((r) => (r.status === status ? metric.value(r) : null)));
    const zone = browserZone();
    const plot = new uPlot(
      {
        width: Math.max(el.clientWidth, 200),
        height: 170,
        legend: { show: false },
        cursor: { drag: { x: true, y: false } },
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), zone),
        scales: { x: { time: true, range: [(now - CHART_WINDOW_MS) / 1000, now / 1000] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.15 : 1] } },
        axes: [
          { stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,0.15)' }, ticks: { stroke: 'rgba(128,128,128,0.3)' } },
          { stroke: 'currentColor', size: 64, values: (_u, values) => values.map((v) => formatSpan(v)), grid: { stroke: 'rgba(128,128,128,0.15)' }, ticks: { stroke: 'rgba(128,128,128,0.3)' } },
        ],
        series: [
          {},
          ...statuses.map((status) => ({
            label: status,
            stroke: statusColour(status),
            paths: () => null,
            points: { show: true, size: 7, width: 1, stroke: statusColour(status), fill: statusColour(status) },
          })),
        ],
      },
      [xs, ...series],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 200), height: 170 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [runs, metric, now]);
  return (
    <figure class="chart">
      <figcaption>{metric.title}</figcaption>
      <div ref={box} class="chart-canvas" aria-hidden="true" />
    </figure>
  );
}

/** Start lag and duration of each run over the last 24 hours, coloured by status. */
export function RunChart({ runs, now, truncated }: { runs: Execution[]; now: number; truncated: boolean }) {
  const statuses = [...new Set(runs.map((r) => r.status))];
  return (
    <div class="run-chart">
      <p class="chart-summary">
        {chartSummary(runs)}
        {truncated ? ' Only the latest runs are drawn.' : ''}
      </p>
      {runs.length > 0 ? (
        <>
          <ul class="chart-legend" aria-label="Colours">
            {statuses.map((status) => (
              <li key={status}>
                <span class={`status-dot status-dot-${status}`} aria-hidden="true" /> {status}
              </li>
            ))}
          </ul>
          <div class="charts" role="img" aria-label={`Start lag and duration per run over the last 24 hours (times in ${browserZone()})`}>
            {METRICS.map((metric) => (
              <MetricChart key={metric.title} metric={metric} runs={runs} now={now} />
            ))}
          </div>
        </>
      ) : null}
    </div>
  );
}
