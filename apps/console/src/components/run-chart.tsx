import type { Execution } from '@punctual/contract';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { browserZone, formatSpan } from '../format/time.js';
import { startLagMs } from './bits.js';
import { axisTimes, axisZone, type ChartWindow, chartWindow, windowWords } from './chart-window.js';

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

/** In words what the chart draws, for people who cannot see it: the runs, then the stretch of time drawn in `zone`. */
export function chartSummary(runs: Execution[], shown: ChartWindow, zone: string): string {
  if (runs.length === 0) return 'No runs in the last 24 hours.';
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run.status, (counts.get(run.status) ?? 0) + 1);
  const byStatus = [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
  const of = (metric: Metric) => runs.map(metric.value).filter((v): v is number => v !== null);
  const count = `${runs.length} run${runs.length === 1 ? '' : 's'}`;
  return `${count} in the last 24 hours: ${byStatus}. Start lag ${spread(of(METRICS[0]!))}; duration ${spread(of(METRICS[1]!))}. ${windowWords(shown, zone)}`;
}

const HEIGHT = 190;
const GRID = { stroke: 'rgba(128,128,128,0.15)' };
const TICKS = { stroke: 'rgba(128,128,128,0.3)' };

/** One chart: a metric per run over time, one point series per status. */
function MetricChart({
  metric,
  runs,
  shown,
  zone,
}: {
  metric: Metric;
  runs: Execution[];
  shown: ChartWindow;
  zone: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const sorted = runs
      .filter((r) => metric.value(r) !== null)
      .sort((a, b) => Date.parse(a.scheduledFor) - Date.parse(b.scheduledFor));
    const statuses = [...new Set(sorted.map((r) => r.status))];
    const xs = sorted.map((r) => Date.parse(r.scheduledFor) / 1000);
    const series = statuses.map((status) => sorted.map((r) => (r.status === status ? metric.value(r) : null)));
    const plot = new uPlot(
      {
        width: Math.max(el.clientWidth, 200),
        height: HEIGHT,
        legend: { show: false },
        cursor: { drag: { x: true, y: false } },
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), zone),
        scales: {
          x: { time: true, range: [shown.from / 1000, shown.to / 1000] },
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.15 : 1] },
        },
        axes: [
          {
            stroke: 'currentColor',
            // 24-hour wall clock in the browser's zone, the date under the first tick of each day;
            // the zone is the axis label. (uPlot's own labels are 12-hour.)
            values: (_u, ticks, _axis, _space, step) =>
              axisTimes(
                ticks.map((t) => t * 1000),
                step * 1000,
                zone,
              ),
            space: 56,
            size: 44,
            label: axisZone(shown, zone),
            labelSize: 18,
            labelFont: '12px system-ui, sans-serif',
            grid: GRID,
            ticks: TICKS,
          },
          {
            stroke: 'currentColor',
            size: 64,
            values: (_u, values) => values.map((v) => formatSpan(v)),
            grid: GRID,
            ticks: TICKS,
          },
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
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 200), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [runs, metric, shown.from, shown.to, zone]);
  return (
    <figure class="chart">
      <figcaption>{metric.title}</figcaption>
      <div ref={box} class="chart-canvas" aria-hidden="true" />
    </figure>
  );
}

/**
 * Start lag and duration of each run over the last 24 hours, coloured by status: over the whole 24
 * hours, or over the stretch the runs fill when that is much shorter (see {@link chartWindow}).
 */
export function RunChart({ runs, now, truncated }: { runs: Execution[]; now: number; truncated: boolean }) {
  const statuses = [...new Set(runs.map((r) => r.status))];
  const zone = browserZone();
  const shown = chartWindow(
    runs.map((r) => Date.parse(r.scheduledFor)),
    now,
  );
  return (
    <div class="run-chart">
      <p class="chart-summary">
        {chartSummary(runs, shown, zone)}
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
          <div
            class="charts"
            role="img"
            aria-label={`Start lag and duration per run. ${windowWords(shown, zone)} Times in ${axisZone(shown, zone)}.`}
          >
            {METRICS.map((metric) => (
              <MetricChart key={metric.title} metric={metric} runs={runs} shown={shown} zone={zone} />
            ))}
          </div>
        </>
      ) : null}
    </div>
  );
}
