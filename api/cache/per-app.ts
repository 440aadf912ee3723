/**
 * What an API app holds across requests, one per app (its ResolvedApiDeps: the /v1 and bare
 * routes of one app register separately and share it), made on its first use and gone with the
 * app. The caches of this folder are made through it, handed what they need from the app's deps
 * (their size settings, the app's ChainChanges) explicitly.
 * @module
 */
import type { ResolvedApiDeps } from '../deps.js';

/** `make`'s value for each app, made once per app. */
export function perApp<T>(make: (deps: ResolvedApiDeps) => T): (deps: ResolvedApiDeps) => T {
  const held = new WeakMap<ResolvedApiDeps, { value: T }>();
  return (deps) => {
    let h = held.get(deps);
    if (!h) held.set(deps, (h = { value: make(deps) }));
    return h.value;
  };
}
