/** The run chart shows the last 24 hours. */
export const CHART_WINDOW_MS = 24 * 3_600_000;
