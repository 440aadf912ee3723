/**
 * Where the console keeps its API key: the tab's session storage (gone when the tab closes).
 * A key in the URL fragment (`/console#key=…`, what the quick start's banner prints) is taken
 * and removed from the address bar at once: a fragment never reaches the server, and once
 * replaced it is neither in the history nor in a link copied from the bar.
 * @module
 */

const KEY = 'blockwire.console.key';

/** Takes a `#key=` fragment into session storage and clears it from the address bar. */
export function takeKeyFromFragment(): void {
  const m = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (!m) return;
  sessionStorage.setItem(KEY, decodeURIComponent(m[1]!));
  history.replaceState(history.state, '', `${location.pathname}${location.search}`);
}

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, key);
}
