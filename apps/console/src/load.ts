import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  error: string | null;
  loading: boolean;
  /** Loads again, keeping what is shown until the answer comes. */
  reload: () => Promise<void>;
}

/**
 * What `load` answers, loaded again whenever `deps` change; an answer to an older request never
 * replaces a newer one. With `everyMs`, it is also refreshed while the page is visible.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], everyMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: string | null; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const latest = useRef(0);
  const run = useCallback(async () => {
    const request = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await load();
      if (request === latest.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (request === latest.current) setState((s) => ({ data: s.data, error: errorText(error), loading: false }));
    }
  }, deps);
  useEffect(() => {
    setState({ data: undefined, error: null, loading: true });
    void run(); // never rejects: an error is the state's
  }, [run]);
  useEffect(() => {
    if (!everyMs) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void run();
    }, everyMs);
    return () => clearInterval(timer);
  }, [run, everyMs]);
  return { ...state, reload: run };
}
