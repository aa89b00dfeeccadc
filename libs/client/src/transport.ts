import { type BodyOf, type ErrorDetail, isErrorCode, type ResponseOf, type RouteDef } from '@punctual/contract';
import { PunctualApiError } from './errors.js';

export interface PunctualClientOptions {
  /** Where the API is, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** A `fetch` of your own (tests, proxies, a browser's); the global one by default. */
  fetch?: typeof fetch;
  /**
   * The namespace every call of a namespace acts in (sent as `?namespace=`); the server's default
   * (`default`) when left out. Routes of the whole cluster take none. A function is asked at each
   * call (a console whose namespace is the page's).
   */
  namespace?: string | (() => string | undefined);
}

export interface CallOptions<R extends RouteDef> {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: BodyOf<R>;
  headers?: Record<string, string>;
}

/** Calls one contract route over `fetch`: builds the URL, sends JSON, turns error answers into {@link PunctualApiError}. */
export class Transport {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: PunctualClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  async call<R extends RouteDef>(route: R, options: CallOptions<R> = {}): Promise<ResponseOf<R>> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const res = await this.fetch(this.url(route, options), {
      method: route.method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    const json = parse(text);
    if (!res.ok) throw apiError(res, text, json);
    return json as ResponseOf<R>;
  }

  private url(route: RouteDef, options: CallOptions<RouteDef>): string {
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = options.params?.[name];
      if (value === undefined) throw new TypeError(`${route.method} ${route.path} needs ${name}`);
      return encodeURIComponent(value);
    });
    const search = new URLSearchParams();
    const query = { ...options.query };
    const { namespace } = this.options;
    const current = typeof namespace === 'function' ? namespace() : namespace;
    if (!route.cluster && current !== undefined) query.namespace ??= current;
    for (const [key, value] of Object.entries(query)) {
      for (const item of Array.isArray(value) ? value : [value])
        if (item !== undefined && item !== null) search.append(key, String(item));
    }
    const text = search.toString();
    return `${this.baseUrl}${path}${text ? `?${text}` : ''}`;
  }
}

/** The error of an answer that is not ok: the envelope's, its code trusted only if the contract knows it. */
function apiError(res: Response, text: string, json: unknown): PunctualApiError {
  const error = (json as { error?: { code?: unknown; message?: string; details?: ErrorDetail[] } } | undefined)?.error;
  const code = isErrorCode(error?.code) ? error.code : 'unknown';
  return new PunctualApiError(
    res.status,
    code,
    error?.message ?? (text.slice(0, 200) || res.statusText),
    error?.details ?? [],
  );
}

function parse(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // not JSON (a proxy's error page): the error is built from the text and status instead
  }
}
