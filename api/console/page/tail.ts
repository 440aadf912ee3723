/**
 * The live tail: the key's events over the stream (`/v1/stream`, the key offered as the
 * subprotocol `blockwire.key.<key>`, never in the URL), resumed after the last event id seen by
 * this tab (session storage) so that a reload or a dropped connection misses nothing. Where the
 * page's origin serves no stream (the streams role on a port of its own), the same events by
 * long polling (GET /v1/events with the apiKey header). Rows have a fixed height and the list a
 * fixed size: nothing moves on the page while events arrive.
 * @module
 */
import { btc, h, replace, short } from './dom.js';
import type { Api } from './api.js';
import type { View } from './view.js';

type StreamEvent = {
  id: number;
  type: string;
  created_at: string;
  address: string | null;
  transaction_hash: string | null;
  block: { hash: string; height: number } | null;
  confirmations: number | null;
  received: number | null;
  sent: number | null;
};

const AFTER = 'blockwire.console.after';
/** Rows kept on screen. */
const ROWS = 200;
/** Failed WebSocket openings in a row before the tail falls back to long polling. */
const WS_TRIES = 2;

export function tailView(api: Api, key: string): View & { start(): void; stop(): void } {
  const status = h('p', { id: 'tail-status', class: 'summary' }, 'Connecting…');
  const log = h('ol', {
    id: 'tail',
    class: 'tail',
    role: 'log',
    'aria-live': 'polite',
    'aria-relevant': 'additions',
    'aria-label': 'Events, newest last',
  });
  const empty = h('li', { class: 'muted empty' }, 'No event yet: events of this key’s subscriptions appear here as they happen.');
  log.append(empty);
  const el = h('section', { 'aria-labelledby': 'tail-title' }, h('h2', { id: 'tail-title' }, 'Live tail'), status, log);
  let ws: WebSocket | undefined;
  let stopped = false;
  let failures = 0;
  let timer: number | undefined;
  const poll = new AbortController();

  const after = () => sessionStorage.getItem(AFTER);
  function add(e: StreamEvent): void {
    empty.remove();
    sessionStorage.setItem(AFTER, String(e.id));
    const net = (e.received ?? 0) - (e.sent ?? 0);
    const row = h(
      'li',
      { class: 'event', 'data-type': e.type, 'data-tx': e.transaction_hash ?? '' },
      h('span', { class: 'seq' }, `#${e.id}`),
      h('span', { class: `badge ${e.type.replace('.', '-')}` }, e.type),
      h(
        'span',
        { class: 'mono what', title: e.transaction_hash ?? e.block?.hash ?? '' },
        e.transaction_hash ? short(e.transaction_hash) : e.block ? `block ${e.block.height}` : '',
      ),
      h('span', { class: 'mono addr', title: e.address ?? '' }, e.address ? short(e.address, 12) : ''),
      h('span', { class: 'num amount' }, e.received !== null || e.sent !== null ? btc(net) : ''),
      h('span', { class: 'conf' }, e.confirmations === null ? '' : `${e.confirmations} conf`),
    );
    // Newest last, as `tail -f`: appended rows move nothing; the list follows them while it is
    // scrolled to the end, and an old row leaving the top is paid for by the scroll position.
    const following = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.append(row);
    while (log.children.length > ROWS) {
      const first = log.firstElementChild as HTMLElement;
      const height = first.offsetHeight;
      first.remove();
      log.scrollTop -= height;
    }
    if (following) log.scrollTop = log.scrollHeight;
  }

  function connect(): void {
    if (stopped) return;
    const url = new URL('/v1/stream', location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const a = after();
    if (a !== null) url.searchParams.set('after', a);
    const socket = new WebSocket(url, ['blockwire.v1', `blockwire.key.${key}`]);
    ws = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      failures = 0;
      status.textContent = 'Connected, catching up…';
    };
    socket.onmessage = (m) => {
      const msg = JSON.parse(String(m.data)) as StreamEvent | { type: string; error_code?: string };
      if ('id' in msg && typeof msg.id === 'number') add(msg);
      else if (msg.type === 'stream.live') status.textContent = a === null ? 'Live' : `Live — resumed after event ${a}`;
    };
    socket.onclose = (c) => {
      if (stopped) return;
      // 4410: the resume point is older than the retention: start again from now.
      if (c.code === 4410) sessionStorage.removeItem(AFTER);
      if (!opened && ++failures >= WS_TRIES) return void longPoll();
      status.textContent = 'Disconnected — reconnecting…';
      timer = window.setTimeout(connect, 2000);
    };
  }

  async function longPoll(): Promise<void> {
    status.textContent = 'Live (long polling)';
    while (!stopped) {
      try {
        const a = after();
        const r = await api.get<{ events: StreamEvent[]; next: number }>(`/v1/events?wait=25${a !== null ? `&after=${a}` : ''}`);
        for (const e of r.events) add(e);
        sessionStorage.setItem(AFTER, String(r.next));
      } catch {
        if (stopped || poll.signal.aborted) return;
        status.textContent = 'Disconnected — retrying…';
        await new Promise((res) => setTimeout(res, 3000));
      }
    }
  }

  return {
    id: 'tail',
    title: 'Live tail',
    el,
    everyMs: 0,
    refresh: async () => undefined,
    start: connect,
    stop() {
      stopped = true;
      poll.abort();
      clearTimeout(timer);
      ws?.close();
      replace(status, 'Stopped.');
    },
  };
}
