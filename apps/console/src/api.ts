import { PunctualApiError, PunctualClient } from '@punctual/client';
import { CONSOLE_HEADER } from '@punctual/contract';
import { currentNamespace } from './namespace.js';

/** Where a browser signs in; `next` brings it back to the page it was on. */
export function loginUrl(): string {
  return `/admin/login?next=${encodeURIComponent(window.location.pathname + window.location.search)}`;
}

/**
 * The API as the console calls it: this origin, the browser's session cookie and the console's
 * header instead of a key, in the namespace the console shows. A 401 means the session ended: back
 * to the login form.
 */
export const api = new PunctualClient({
  baseUrl: window.location.origin,
  namespace: currentNamespace,
  fetch: async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set(CONSOLE_HEADER, '1');
    const res = await fetch(input, { ...init, headers, credentials: 'same-origin' });
    if (res.status === 401) window.location.assign(loginUrl());
    return res;
  },
});

/** What went wrong, in words for the person who clicked: the API's message, or the network's. */
export function errorText(error: unknown): string {
  if (error instanceof PunctualApiError) {
    const details = error.details.map((d) => `${d.field}: ${d.message}`).join('; ');
    return details ? `${error.message} (${details})` : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
