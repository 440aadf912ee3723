/**
 * A function of a string remembered for at most `limit` keys; past it the memory starts over. For
 * what a delivery worker derives again and again from the same few strings (a hook's URL, a
 * secret), where an LRU's bookkeeping would cost more than the rare rebuild after a reset.
 * @module
 */

/** `make`, remembered: a key's value is made once (a throw is not remembered). */
export function boundedMemo<V>(limit: number, make: (key: string) => V): (key: string) => V {
  const kept = new Map<string, V>();
  return (key) => {
    let value = kept.get(key);
    if (value === undefined) {
      value = make(key);
      if (kept.size >= limit) kept.clear();
      kept.set(key, value);
    }
    return value;
  };
}
