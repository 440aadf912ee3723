/** What main.ts needs of a view: its section, how to refresh it and how often while shown. */
export type View = { id: string; title: string; el: HTMLElement; refresh(): Promise<void>; everyMs: number };
