#!/usr/bin/env node
// Renders the panels of deploy/observability/grafana-dashboard.json against a running Punctual, without
// Grafana: starts a local Prometheus (Debian's `prometheus` package) that scrapes the given
// /metrics endpoints and evaluates deploy/observability/alerts.yaml, waits, runs every panel's
// queries through Prometheus' HTTP API, draws them as SVG, and saves a PNG with headless Chromium.
//
//   node scripts/render-dashboard.mjs --target api=127.0.0.1:3000 --target scheduler=127.0.0.1:3001 \
//     --target worker=127.0.0.1:3002 (a job may have several targets) [--token KEY] [--minutes 4] [--out deploy/observability/dashboard.png]
//
// --token is sent as the bearer token of every scrape (the API wants a viewer key or METRICS_TOKEN).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launchChromium } from '../test/support/browser.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SCRAPE_S = 2;
/** What Grafana's $__rate_interval would be at this scrape interval and a few-minute window. */
const RATE_INTERVAL = '20s';

const { values: args } = parseArgs({
  options: {
    target: { type: 'string', multiple: true, default: [] },
    token: { type: 'string' },
    minutes: { type: 'string', default: '4' },
    out: { type: 'string', default: join(ROOT, 'deploy/observability/dashboard.png') },
  },
});
if (args.target.length === 0) {
  process.stderr.write('give at least one --target job=host:port (see the header of this file)\n');
  process.exit(2);
}

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function startPrometheus() {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-prometheus-'));
  const targets = new Map();
  for (const [job, address] of args.target.map((t) => t.split('=')))
    targets.set(job, [...(targets.get(job) ?? []), address]);
  const jobs = [...targets].map(([job, addresses]) =>
    [
      `  - job_name: ${job}`,
      ...(args.token ? ['    authorization:', `      credentials: ${JSON.stringify(args.token)}`] : []),
      `    static_configs: [{ targets: ${JSON.stringify(addresses)} }]`,
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      `global: { scrape_interval: ${SCRAPE_S}s, evaluation_interval: ${SCRAPE_S}s }`,
      `rule_files: [${JSON.stringify(join(ROOT, 'deploy/observability/alerts.yaml'))}]`,
      'scrape_configs:',
      ...jobs,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const child = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let log = '';
  child.stderr.on('data', (chunk) => (log += chunk));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i += 1) {
    if (child.exitCode !== null) throw new Error(`prometheus exited:\n${log}`);
    if (
      await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 100) throw new Error(`prometheus not ready:\n${log}`);
    await sleep(200);
  }
  return { url, stop: () => (child.kill('SIGTERM'), rmSync(dir, { recursive: true, force: true })) };
}

async function query(prometheus, path, params) {
  const res = await fetch(`${prometheus.url}/api/v1/${path}?${new URLSearchParams(params)}`);
  const body = await res.json();
  if (body.status !== 'success') throw new Error(`${params.query}: ${body.error}`);
  return body.data;
}

const legend = (format, labels) =>
  (format || '{{__name__}}').replace(/\{\{\s*(\w+)\s*\}\}/g, (_, name) => labels[name] ?? '');

function formatValue(value, unit) {
  if (!Number.isFinite(value)) return '–';
  if (unit === 's') return value < 1 ? `${(value * 1000).toFixed(value < 0.01 ? 2 : 0)} ms` : `${value.toFixed(2)} s`;
  if (unit === 'percentunit') return `${(value * 100).toFixed(0)} %`;
  if (unit === 'ops') return `${value.toFixed(value < 10 ? 2 : 0)}/s`;
  return Math.abs(value) >= 100 || Number.isInteger(value) ? value.toFixed(0) : value.toFixed(2);
}

const COLORS = ['#3274d9', '#56a64b', '#e0b400', '#e02f44', '#8f3bb8', '#fa6400', '#37872d', '#1f60c4'];
const escape = (text) =>
  String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

/** Pixel size of a panel on the page: 24 columns of the viewport, rows of 30 px, gaps of 6 px. */
const VIEWPORT = 1600;
const COLUMN = (VIEWPORT - 24 - 23 * 6) / 24;
const panelSize = ({ w, h }) => ({ width: w * COLUMN + (w - 1) * 6 - 18, height: h * 30 + (h - 1) * 6 - 10 });

function chart(series, unit, [start, end], size) {
  const perRow = Math.max(1, Math.floor(size.width / 190));
  const [w, h, left, bottom] = [size.width, size.height - 18 - Math.ceil(series.length / perRow) * 15, 62, 14];
  const values = series.flatMap((s) => s.points.map(([, v]) => v)).filter(Number.isFinite);
  if (values.length === 0) return '<div class="empty">no data</div>';
  const low = Math.min(0, ...values);
  const high = Math.max(...values) > low ? Math.max(...values) : low + 1;
  const x = (t) => left + ((t - start) / (end - start)) * (w - left - 4);
  const y = (v) => 4 + (1 - (v - low) / (high - low)) * (h - bottom - 8);
  const lines = series.map((s, i) => {
    const points = s.points
      .filter(([, v]) => Number.isFinite(v))
      .map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    return `<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.5" points="${points.join(' ')}"/>`;
  });
  const time = (t) => new Date(t * 1000).toISOString().slice(11, 19);
  return `<svg viewBox="0 0 ${w} ${h}" width="${w}" height="${h}">
    <line x1="${left}" y1="${y(high)}" x2="${w}" y2="${y(high)}" class="grid"/><line x1="${left}" y1="${y(low)}" x2="${w}" y2="${y(low)}" class="grid"/>
    <text x="${left - 4}" y="${y(high) + 4}" text-anchor="end">${escape(formatValue(high, unit))}</text>
    <text x="${left - 4}" y="${y(low)}" text-anchor="end">${escape(formatValue(low, unit))}</text>
    <text x="${left}" y="${h - 2}">${time(start)}</text><text x="${w - 4}" y="${h - 2}" text-anchor="end">${time(end)} UTC</text>
    ${lines.join('\n')}</svg>
    <div class="legend">${series
      .map(
        (s, i) =>
          `<span><i style="background:${COLORS[i % COLORS.length]}"></i>${escape(s.name)} ` +
          `<b>${escape(formatValue(s.points.at(-1)?.[1], unit))}</b></span>`,
      )
      .join('')}</div>`;
}

/**
 * A table panel as Grafana shows an instant query `format: table` through the panel's `organize`
 * transformation (columns named, ordered, some left out), rows sorted by its `sortBy` field,
 * numerically when a `convertFieldType` makes that field a number.
 */
function table(panel, series) {
  const step = (id) => panel.transformations?.find((t) => t.id === id)?.options ?? {};
  const { excludeByName = {}, indexByName = {}, renameByName = {} } = step('organize');
  const columns = [...new Set(series.flatMap((s) => Object.keys(s.labels)))]
    .filter((c) => !excludeByName[c])
    .sort((a, b) => (indexByName[a] ?? 99) - (indexByName[b] ?? 99));
  const by = step('sortBy').sort?.[0]?.field;
  const numeric = step('convertFieldType').conversions?.some(
    (c) => c.targetField === by && c.destinationType === 'number',
  );
  const key = (s) => (numeric ? Number(s.labels[by]) : (s.labels[by] ?? ''));
  const rows = by ? [...series].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)) : series;
  if (rows.length === 0) return '<div class="empty">no data</div>';
  const head = columns.map((c) => `<th>${escape(renameByName[c] ?? c)}</th>`).join('');
  const cells = (s) => columns.map((c) => `<td>${escape(s.labels[c] ?? '')}</td>`).join('');
  return `<table><tr>${head}</tr>${rows.map((s) => `<tr>${cells(s)}</tr>`).join('')}</table>`;
}

async function renderPanel(prometheus, panel, window) {
  const unit = panel.fieldConfig?.defaults?.unit ?? 'short';
  const series = [];
  for (const target of panel.targets) {
    const expr = target.expr.replaceAll('$__rate_interval', RATE_INTERVAL);
    if (panel.type === 'stat' || panel.type === 'table') {
      const data = await query(prometheus, 'query', { query: expr, time: String(window[1]) });
      for (const r of data.result)
        series.push({ name: legend(target.legendFormat, r.metric), labels: r.metric, value: Number(r.value[1]) });
    } else {
      const data = await query(prometheus, 'query_range', {
        query: expr,
        start: String(window[0]),
        end: String(window[1]),
        step: `${SCRAPE_S}s`,
      });
      for (const r of data.result)
        series.push({ name: legend(target.legendFormat, r.metric), points: r.values.map(([t, v]) => [t, Number(v)]) });
    }
  }
  const { x, y, w, h } = panel.gridPos;
  const body =
    panel.type === 'stat'
      ? `<div class="stat">${series.length === 0 ? 'no data' : series.map((s) => escape(panel.options?.textMode === 'name' ? s.name : formatValue(s.value, unit))).join('<br>')}</div>`
      : panel.type === 'table'
        ? table(panel, series)
        : chart(series, unit, window, panelSize(panel.gridPos));
  return `<section style="grid-column:${x + 1} / span ${w};grid-row:${y + 1} / span ${h}"><h2>${escape(panel.title)}</h2>${body}</section>`;
}

const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/observability/grafana-dashboard.json'), 'utf8'));
const prometheus = await startPrometheus();
try {
  const minutes = Number(args.minutes);
  process.stderr.write(`prometheus at ${prometheus.url}; collecting for ${minutes} min…\n`);
  const start = Date.now() / 1000;
  await sleep(minutes * 60_000);
  const window = [start + 10, Date.now() / 1000];
  const sections = [];
  for (const panel of dashboard.panels) {
    if (panel.type === 'row')
      sections.push(`<h1 style="grid-column:1 / span 24;grid-row:${panel.gridPos.y + 1}">${escape(panel.title)}</h1>`);
    else sections.push(await renderPanel(prometheus, panel, window));
  }
  const alerts = (await query(prometheus, 'alerts', {})).alerts.map((a) => `${a.labels.alertname} (${a.state})`);
  const html = `<!doctype html><meta charset="utf-8"><style>
    body { font: 12px system-ui, sans-serif; margin: 12px; background: #f4f5f8; color: #222; }
    header { margin-bottom: 8px } header b { font-size: 16px }
    main { display: grid; grid-template-columns: repeat(24, 1fr); grid-auto-rows: 30px; gap: 6px; }
    section { background: #fff; border: 1px solid #dcdee4; border-radius: 3px; padding: 4px 8px; overflow: hidden; }
    h1 { font-size: 13px; margin: 6px 0 0; align-self: end; } h2 { font-size: 12px; margin: 0 0 2px; }
    svg text { font-size: 10px; fill: #666; } .grid { stroke: #eee; }
    .legend span { margin-right: 10px; white-space: nowrap; } .legend i { display: inline-block; width: 10px; height: 3px; margin-right: 3px; vertical-align: middle; }
    table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 1px 6px; border-bottom: 1px solid #eee; } th { color: #666; font-weight: 600; }
    .stat { font-size: 22px; font-weight: 600; padding-top: 8px; } .empty { color: #999; padding-top: 30px; text-align: center; }
  </style><header><b>${escape(dashboard.title)}</b> — the queries of grafana-dashboard.json evaluated by a local Prometheus against a running stack,
    ${new Date(window[0] * 1000).toISOString().slice(0, 19)}Z – ${new Date(window[1] * 1000).toISOString().slice(11, 19)}Z (drawn by scripts/render-dashboard.mjs, not by Grafana).
    Alerts: ${alerts.length ? escape(alerts.join(', ')) : 'none'}.</header><main>${sections.join('\n')}</main>`;
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: VIEWPORT, height: 1000 } });
    await page.setContent(html);
    await page.screenshot({ path: args.out, fullPage: true });
  } finally {
    await browser.close();
  }
  process.stderr.write(`wrote ${args.out}\n`);
} finally {
  prometheus.stop();
}
