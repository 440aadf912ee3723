/**
 * Chain: the index's height against the node's (GET /healthz), a progress bar with the rate and
 * the time left while the index is behind (the rate from the heights seen over the last minute),
 * and the last blocks (GET /v1/blocks).
 * @module
 */
import type { Api } from './api.js';
import { duration, h, replace, short, when } from './dom.js';
import type { View } from './view.js';

type Health = {
  status: string;
  network: string;
  index: { height: number } | null;
  node: { height: number } | { error: string } | null;
  lag: number | null;
};
type Block = { block_hash: string; height: number; confirmation_time: string; tx_count: number; size: number };

/** Heights seen, for the rate: kept over this window. */
const RATE_WINDOW_MS = 60_000;

export function chainView(api: Api): View {
  const summary = h('p', { class: 'summary', id: 'chain-summary' }, 'Reading the index…');
  const bar = h('progress', { id: 'chain-progress', max: 1, value: 0, 'aria-labelledby': 'chain-summary' });
  const rate = h('p', { class: 'rate', id: 'chain-rate' }, '\u00a0');
  const blocks = h('tbody');
  const el = h(
    'section',
    { 'aria-labelledby': 'chain-title' },
    h('h2', { id: 'chain-title' }, 'Chain'),
    summary,
    bar,
    rate,
    h('h3', {}, 'Last blocks'),
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        { id: 'blocks' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Height'),
            h('th', { scope: 'col' }, 'Hash'),
            h('th', { scope: 'col' }, 'Time'),
            h('th', { scope: 'col' }, 'Transactions'),
            h('th', { scope: 'col' }, 'Size'),
          ),
        ),
        blocks,
      ),
    ),
  );
  const samples: { at: number; height: number }[] = [];

  async function refresh(): Promise<void> {
    const health = await fetch('/healthz', { cache: 'no-store' }).then((r) => r.json() as Promise<Health>);
    const index = health.index?.height ?? -1;
    const node = health.node && 'height' in health.node ? health.node.height : null;
    const now = Date.now();
    samples.push({ at: now, height: index });
    while (samples.length > 2 && now - samples[0]!.at > RATE_WINDOW_MS) samples.shift();
    bar.max = Math.max(1, node ?? index);
    bar.value = Math.max(0, index);
    const behind = node !== null ? node - index : null;
    const synced = behind !== null && behind <= 0;
    summary.textContent = `${health.network}: index at ${index < 0 ? 'nothing yet' : `block ${index.toLocaleString()}`}, node at ${node === null ? 'unknown' : `block ${node.toLocaleString()}`} — ${synced ? 'in sync' : behind === null ? health.status : `${behind.toLocaleString()} behind`}`;
    const first = samples[0]!;
    const perSecond = now > first.at ? ((index - first.height) * 1000) / (now - first.at) : 0;
    rate.textContent =
      synced || behind === null
        ? '\u00a0'
        : perSecond > 0
          ? `${perSecond.toFixed(1)} blocks/s — about ${duration(behind / perSecond)} left`
          : 'measuring the rate…';
    if (index >= 0) {
      const list = await api.get<Block[]>('/v1/blocks?limit=8');
      replace(
        blocks,
        ...list.map((b) =>
          h(
            'tr',
            {},
            h('td', {}, b.height.toLocaleString()),
            h('td', { class: 'mono', title: b.block_hash }, short(b.block_hash, 16)),
            h('td', {}, when(b.confirmation_time)),
            h('td', {}, b.tx_count),
            h('td', {}, `${b.size.toLocaleString()} B`),
          ),
        ),
      );
    }
  }
  return { id: 'chain', title: 'Chain', el, refresh, everyMs: 2000 };
}
