import type { Execution } from '@punctual/contract';
import { useEffect, useState } from 'preact/hooks';
import { errorText } from '../api.js';
import { ErrorText } from './bits.js';

type ChartModule = typeof import('./run-chart.js');

/**
 * The run chart, loaded when a task page first shows one: uPlot stays out of the bundle every
 * other page loads, and a chart that cannot start (uPlot reads the browser's locale as it loads)
 * costs the chart only, not the page.
 */
export function LazyRunChart(props: { runs: Execution[]; now: number; truncated: boolean }) {
  const [chart, setChart] = useState<{ module?: ChartModule; error?: string }>({});
  useEffect(() => {
    import('./run-chart.js').then(
      (module) => setChart({ module }),
      (error: unknown) => setChart({ error: `The chart cannot be drawn here: ${errorText(error)}` }),
    );
  }, []);
  if (chart.error) return <ErrorText error={chart.error} />;
  if (!chart.module) return <p class="muted">Loading…</p>;
  return <chart.module.RunChart {...props} />;
}
