/**
 * The per-hook chart: attempts per minute over the last hour (GET /v1/hooks/{id}/stats) as
 * inline SVG bars, delivered below and failed stacked on top, each minute with a title for
 * pointer users and the hour's totals in the label for screen readers.
 * @module
 */
import { svg } from './dom.js';

export type HookStats = {
  hook_id: string;
  since: string;
  delivered: number;
  failed: number;
  minutes: { minute: string; delivered: number; failed: number }[];
};

const W = 900;
const H = 90;
const PAD = 16;

export function attemptsChart(stats: HookStats): SVGElement {
  const top = Math.max(1, ...stats.minutes.map((m) => m.delivered + m.failed));
  const slot = W / stats.minutes.length;
  const scale = (H - PAD) / top;
  const bars = stats.minutes.flatMap((m, i) => {
    const x = i * slot + 1;
    const dh = m.delivered * scale;
    const fh = m.failed * scale;
    const at = new Date(m.minute).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    const title = svg('title', {}, `${at}: ${m.delivered} delivered, ${m.failed} failed`);
    return [
      svg(
        'g',
        { class: 'minute' },
        title,
        svg('rect', { class: 'ok', x, y: H - dh, width: slot - 2, height: dh }),
        svg('rect', { class: 'bad', x, y: H - dh - fh, width: slot - 2, height: fh }),
        svg('rect', { class: 'hit', x: i * slot, y: 0, width: slot, height: H }),
      ),
    ];
  });
  return svg(
    'svg',
    {
      viewBox: `0 0 ${W} ${H + 14}`,
      class: 'chart',
      role: 'img',
      'aria-label': `Last hour: ${stats.delivered} attempts delivered, ${stats.failed} failed; most in one minute: ${top}`,
    },
    svg('line', { class: 'axis', x1: 0, y1: H + 0.5, x2: W, y2: H + 0.5 }),
    ...bars,
    svg('text', { x: 0, y: H + 12, class: 'tick' }, '−60 min'),
    svg('text', { x: W, y: H + 12, class: 'tick', 'text-anchor': 'end' }, 'now'),
    svg('text', { x: 0, y: 10, class: 'tick' }, `${top}/min`),
  );
}
