import type { Execution } from '@punctual/contract';
import { useEffect, useState } from 'preact/hooks';
import { errorText } from '../api.js';
import { browserLocale } from '../format/time.js';
import { ErrorText } from './bits.js';

type ChartModule = typeof import('./run-chart.js');

/**
 * Runs `load` while `navigator.language` reads as a locale `Intl` accepts. uPlot builds an
 * `Intl.NumberFormat(navigator.language)` as its module is evaluated, which throws "Invalid
 * language tag" in a browser reporting a POSIX locale such as `en-US@posix`; a module that failed
 * to evaluate stays failed, so the locale has to be right before the first import. The browser's
 * own value is back once the import has settled.
 */
async function withSafeLanguage<T>(load: () => Promise<T>): Promise<T> {
  const safe = browserLocale();
  if (navigator.language === safe) return load();
  let shadowed = false;
  try {
    Object.defineProperty(navigator, 'language', { configurable: true, get: () => safe });
    shadowed = true;
  } catch {
    // a browser that will not let the property be shadowed: load as it is
  }
  try {
    return await load();
  } finally {
    if (shadowed) delete (navigator as { language?: string }).language;
  }
}

/**
 * The run chart, loaded when a task page first shows one: uPlot stays out of the bundle every
 * other page loads, and a chart that cannot start costs the chart only, not the page.
 */
export function LazyRunChart(props: { runs: Execution[]; now: number; truncated: boolean }) {
  const [chart, setChart] = useState<{ module?: ChartModule; error?: string }>({});
  useEffect(() => {
    withSafeLanguage(() => import('./run-chart.js')).then(
      (module) => setChart({ module }),
      (error: unknown) => setChart({ error: `The chart cannot be drawn here: ${errorText(error)}` }),
    );
  }, []);
  if (chart.error) return <ErrorText error={chart.error} />;
  if (!chart.module) return <p class="muted">Loading…</p>;
  return <chart.module.RunChart {...props} />;
}
