/**
 * Coalesces lookups made in the same turn of the event loop into one call: under load many
 * requests reach the same query at once (their rate-limit answers arrive in one Redis read), and
 * one query for all of their keys costs one round trip, one socket write and one read instead of
 * one each — on this machine class a syscall is a large part of a request's cost. A lone request
 * waits only for the end of the current turn (setImmediate).
 * @module
 */

/** `load(keys)` answers each key (same order, one answer per key); `get(key)` batches calls. */
export function batchPerTick<K, V>(load: (keys: K[]) => Promise<V[]>, max = 256): (key: K) => Promise<V> {
  let pending: { key: K; resolve: (v: V) => void; reject: (e: unknown) => void }[] = [];
  const flush = () => {
    const batch = pending;
    pending = [];
    for (let i = 0; i < batch.length; i += max) {
      const part = batch.slice(i, i + max);
      // Through a promise: a load that throws at once rejects its callers, not the event loop.
      Promise.resolve(part.map((p) => p.key))
        .then(load)
        .then(
          (values) => {
            if (values.length !== part.length) {
              const err = new Error(`batch load answered ${values.length} values for ${part.length} keys`);
              for (const p of part) p.reject(err);
              return;
            }
            part.forEach((p, j) => p.resolve(values[j]!));
          },
          (err: unknown) => {
            for (const p of part) p.reject(err);
          },
        );
    }
  };
  return (key) =>
    new Promise<V>((resolve, reject) => {
      if (pending.length === 0) setImmediate(flush);
      pending.push({ key, resolve, reject });
    });
}
