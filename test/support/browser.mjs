// Finds a Chromium for the browser tests and the screenshot script: a system one when present
// (CHROMIUM_PATH, or `chromium` / `chromium-browser` on PATH: it starts faster), else the build
// that ships inside the @sparticuz/chromium npm package, unpacked to the temp directory on first
// use. Either way `npm install` is all a machine needs.
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

const SYSTEM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** The first executable named `name` on PATH, or null. */
function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here; keep looking
    }
  }
  return null;
}

/** Options for playwright-core's `chromium.launch`, and which browser they name. */
export async function chromiumLaunchOptions() {
  const system = process.env.CHROMIUM_PATH || onPath('chromium') || onPath('chromium-browser');
  if (system) return { executablePath: system, args: SYSTEM_ARGS, headless: true, source: 'system' };
  const { default: packaged } = await import('@sparticuz/chromium');
  return {
    executablePath: await packaged.executablePath(),
    args: packaged.args,
    headless: true,
    source: '@sparticuz/chromium',
  };
}

/** A headless Chromium driven by playwright-core. */
export async function launchChromium() {
  const { chromium } = await import('playwright-core');
  const { source: _source, ...options } = await chromiumLaunchOptions();
  return chromium.launch(options);
}
