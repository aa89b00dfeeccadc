import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler, type Response } from 'express';

/**
 * The console's pages allow nothing but their own origin: scripts and styles from files (no inline
 * code, no `eval`), API calls to this server, and no framing. Bull Board and the OpenAPI UI keep
 * their own rules (their pages use inline scripts), so this applies to the console and login only.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Where a page takes the server's words: the login form's error message. */
const SLOT = '<!--slot-->';

type Page = 'index' | 'login';

/**
 * The console as `npm run build` leaves it in `dist/console`: two pages (the console, the login
 * form) and their hashed assets. When it has not been built, the pages say so instead.
 */
export class ConsoleFiles {
  constructor(readonly dir: string) {}

  /** `dist/console` under the project root (the nearest folder above this file with a package.json). */
  static locate(from: string = fileURLToPath(import.meta.url)): ConsoleFiles {
    for (let dir = dirname(from); ; dir = dirname(dir)) {
      if (existsSync(join(dir, 'package.json'))) return new ConsoleFiles(join(dir, 'dist', 'console'));
      if (dirname(dir) === dir) return new ConsoleFiles(join(dirname(from), 'console'));
    }
  }

  get built(): boolean {
    return existsSync(join(this.dir, 'index.html'));
  }

  /** The hashed scripts, styles and images: cached for good, since a new build changes their names. */
  assets(): RequestHandler {
    return express.static(join(this.dir, 'assets'), {
      immutable: true,
      maxAge: '365d',
      index: false,
      fallthrough: false,
    });
  }

  /** Sends a page with the console's security headers; `slot` is trusted HTML (the server's own). */
  async sendPage(res: Response, page: Page, slot = ''): Promise<void> {
    secure(res);
    const html = await readFile(join(this.dir, `${page}.html`), 'utf8').catch(() => null);
    if (html || page === 'login') {
      res.type('html').send(html ? html.replace(SLOT, slot) : plainLogin(slot));
      return;
    }
    res.status(503).type('html')
      .send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Punctual</title></head>
<body><h1>Punctual</h1><p>The console has not been built: run <code>npm run build</code>. Meanwhile, the API is documented at <a href="/docs">/docs</a>.</p></body></html>`);
  }
}

function secure(res: Response): void {
  res.set({
    'Content-Security-Policy': CONSOLE_CSP,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    'X-Frame-Options': 'DENY',
  });
}

/** The login form without the console's styles (when it has not been built). */
function plainLogin(slot: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Punctual — sign in</title></head>
<body><h1>Punctual</h1>${slot}<form method="post">
<label for="key">API key</label> <input id="key" name="key" type="password" autocomplete="off" required>
<button type="submit">Sign in</button></form></body></html>`;
}
