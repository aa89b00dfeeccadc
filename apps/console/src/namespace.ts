import { DEFAULT_NAMESPACE, NAMESPACE_NAME_PATTERN } from '@punctual/contract';

/** Where the tab keeps the namespace chosen, so a link inside the console stays in it. */
const STORED = 'punctual.namespace';

/**
 * The namespace the console shows: the page's `?namespace=` (a link someone shared), else the one
 * chosen in this tab, else `default`.
 */
export function currentNamespace(): string {
  const asked = new URLSearchParams(window.location.search).get('namespace');
  if (asked && NAMESPACE_NAME_PATTERN.test(asked)) {
    window.sessionStorage.setItem(STORED, asked);
    return asked;
  }
  const stored = window.sessionStorage.getItem(STORED);
  return stored && NAMESPACE_NAME_PATTERN.test(stored) ? stored : DEFAULT_NAMESPACE;
}

/** Shows another namespace: its task list, everything read again. */
export function chooseNamespace(namespace: string): void {
  window.sessionStorage.setItem(STORED, namespace);
  window.location.assign(`/?namespace=${encodeURIComponent(namespace)}`);
}
