/**
 * The few DOM helpers the console's views share: an element builder (text goes in as text
 * nodes, never as HTML, so nothing an API answer holds is parsed as markup), formatting of
 * amounts, times and durations, and a re-render that keeps keyboard focus on the same control.
 * @module
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | ((e: Event) => void) | undefined>;

/** `<tag attrs>children</tag>`; `on<event>` attributes are listeners, booleans toggle the attribute. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(name.slice(2), v);
    else el.setAttribute(name, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** An SVG element (the chart). */
export function svg(tag: string, attrs: Record<string, string | number> = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, v] of Object.entries(attrs)) el.setAttribute(name, String(v));
  append(el, children);
  return el;
}

function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

/**
 * Replaces `container`'s content with `nodes`, keeping focus on the control with the same
 * `data-key` when one had it (a poll that redraws a list must not throw a keyboard user out).
 */
export function replace(container: Element, ...nodes: Child[]): void {
  const focused =
    document.activeElement instanceof HTMLElement && container.contains(document.activeElement)
      ? document.activeElement.dataset.key
      : undefined;
  container.replaceChildren();
  append(container, nodes);
  if (focused !== undefined) container.querySelector<HTMLElement>(`[data-key="${CSS.escape(focused)}"]`)?.focus();
}

/** Satoshis as BTC with 8 decimals. */
export function btc(sats: number): string {
  const neg = sats < 0;
  const s = String(Math.abs(Math.round(sats))).padStart(9, '0');
  return `${neg ? '−' : ''}${s.slice(0, -8)}.${s.slice(-8)} BTC`;
}

/** A duration in seconds, short: `45 s`, `12 min`, `3 h 20 min`, `2 d 4 h`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 90) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** An ISO time as the browser's local time of day (the date too when not today). */
export function when(iso: string | null): string {
  if (!iso) return '—';
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

/** The first `n` and last 4 characters of a long id or hash. */
export function short(s: string, n = 10): string {
  return s.length <= n + 5 ? s : `${s.slice(0, n)}…${s.slice(-4)}`;
}
