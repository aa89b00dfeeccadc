import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * The console's build: two pages (the console, the login form) and their hashed assets in
 * `dist/console`, which the API serves from `/` and `/assets`. The console imports the wire
 * contract and the typed client from their sources, like every other part of Punctual.
 */
export default defineConfig({
  root: here('.'),
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  resolve: {
    alias: {
      '@punctual/contract': here('../../libs/contract/src/index.ts'),
      '@punctual/client': here('../../libs/client/src/index.ts'),
    },
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: here('../../dist/console'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    // Everything stays a file of this origin; the Content-Security-Policy names no other source.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    rolldownOptions: { input: { index: here('index.html'), login: here('login.html') } },
  },
});
