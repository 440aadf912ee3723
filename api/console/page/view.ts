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

/**
 * A view's refresh and its actions in its one lane: `act` runs an action (a form's submit, a
 * button's click), then `reset` (what the view keeps of the last drawing, so that it redraws)
 * and `load`; a failure goes to `notify` with the server's message.
 */
export function viewLane(
  load: () => Promise<void>,
  notify: (message: string) => void,
  reset?: () => void,
): { refresh(): Promise<void>; act(e: Event | null, f: () => Promise<void>): Promise<void> } {
  const inLane = lane();
  return {
    refresh: () => inLane(load),
    async act(e, f) {
      e?.preventDefault();
      try {
        await inLane(async () => {
          await f();
          reset?.();
          await load();
        });
      } catch (err) {
        notify(err instanceof Error ? err.message : String(err));
      }
    },
  };
}
