/** What main.ts needs of a view: its section, how to refresh it and how often while shown. */
export type View = { id: string; title: string; el: HTMLElement; refresh(): Promise<void>; everyMs: number };

/**
 * A view's one lane: each call runs after the previous one has ended, so an action (a delete)
 * never lands in the middle of a refresh that listed the thing deleted and is still reading
 * its details (a read the browser would log as a failed load).
 */
export function lane(): <T>(f: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return <T>(f: () => Promise<T>): Promise<T> => {
    const run = last.then(f, f);
    last = run.catch(() => undefined);
    return run;
  };
}
