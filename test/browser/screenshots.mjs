#!/usr/bin/env node
// Signs in to a running Punctual API with headless Chromium and saves screenshots of Bull Board
// and the OpenAPI UI — for a person to look at.
//   node test/browser/screenshots.mjs [http://127.0.0.1:3000] [outDir]   (key in PUNCTUAL_KEY)
import { mkdirSync } from 'node:fs';
import { launchChromium } from '../support/browser.mjs';

/** Signs in with `key`, visits the board and the docs; returns what each page showed. */
export async function takeScreenshots(baseUrl, key, outDir) {
  mkdirSync(outDir, { recursive: true });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${baseUrl}/admin/queues`);
    const loginUrl = page.url();
    await page.fill('#key', key);
    await Promise.all([page.waitForURL(/\/admin\/queues/), page.click('button[type=submit]')]);
    await page.waitForSelector('text=executions', { timeout: 15_000 });
    await page.waitForLoadState('networkidle').catch(() => undefined);
    const board = await page.textContent('body');
    await page.screenshot({ path: `${outDir}/bull-board.png`, fullPage: true });
    await page.goto(`${baseUrl}/docs`);
    await page.waitForSelector('.opblock', { timeout: 15_000 });
    const docs = await page.textContent('body');
    await page.screenshot({ path: `${outDir}/openapi.png`, fullPage: false });
    return { loginUrl, board, docs };
  } finally {
    await browser.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [baseUrl = 'http://127.0.0.1:3000', outDir = 'test/artifacts/screenshots'] = process.argv.slice(2);
  const key = process.env.PUNCTUAL_KEY;
  if (!key) {
    process.stderr.write('set PUNCTUAL_KEY to an admin API key\n');
    process.exit(2);
  }
  await takeScreenshots(baseUrl, key, outDir);
  process.stdout.write(`screenshots in ${outDir}\n`);
}
