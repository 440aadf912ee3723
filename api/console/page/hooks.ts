/**
 * Hooks: each of the key's endpoints (GET /v1/hooks) with its last hour's chart
 * (GET /v1/hooks/{id}/stats) and recent deliveries (GET /v1/hooks/{id}/deliveries): event,
 * status, attempts, last answer's code and latency, next retry. A delivery's request and answer
 * open in a dialog (…/deliveries/{delivery}/exchange); redeliver (…/redeliver), enable a
 * disabled hook (…/enable), rotate its secret (…/rotate-secret: the new secret shown once), and
 * register an http hook (POST /v1/hooks: its secret shown once too).
 * @module
 */
import type { Api } from './api.js';
import { attemptsChart, type HookStats } from './chart.js';
import { h, replace, short, when } from './dom.js';
import { viewLane, type View } from './view.js';

type Hook = {
  id: string;
  type: 'http' | 'sns';
  url: string | null;
  topic_arn: string | null;
  disabled: boolean;
  disabled_reason: string | null;
  created_at: string;
};
type Delivery = {
  id: string;
  event_id: number;
  type: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  last_latency_ms: number | null;
  next_attempt_at: string | null;
  payload: { transaction_hash?: string | null };
};
type Exchange = {
  request: { method: string; url: string; headers: Record<string, string>; body: string };
  response: { sent_at: string; status: number | null; latency_ms: number | null; body: string | null; error: string | null } | null;
};

/** Recent deliveries shown per hook. */
const DELIVERIES_SHOWN = 10;

export function hooksView(api: Api, notify: (message: string) => void): View {
  const list = h('div', { id: 'hook-list', class: 'cards' });
  const secretBox = h('div', { id: 'secret', class: 'secret', role: 'status', hidden: true });
  const dialogBody = h('div', { id: 'exchange-body' });
  const dialog = h(
    'dialog',
    { id: 'exchange', 'aria-labelledby': 'exchange-title' },
    h('h3', { id: 'exchange-title' }, 'Delivery'),
    dialogBody,
    h('form', { method: 'dialog' }, h('button', { type: 'submit' }, 'Close')),
  );
  const url = h('input', {
    id: 'hook-url',
    type: 'url',
    required: true,
    placeholder: 'the https URL of your receiver',
    autocomplete: 'off',
  });
  const form = h(
    'form',
    { class: 'inline', onsubmit: (e) => void act(e, () => create()) },
    h('label', { for: 'hook-url' }, 'New webhook URL'),
    url,
    h('button', { type: 'submit' }, 'Add hook'),
  );
  const el = h('section', { 'aria-labelledby': 'hooks-title' }, h('h2', { id: 'hooks-title' }, 'Hooks'), form, secretBox, list, dialog);
  let shown = '';

  const { act, refresh } = viewLane(load, notify);

  function showSecret(what: string, secret: string): void {
    replace(
      secretBox,
      h('strong', {}, what),
      ' — shown once, keep it now: ',
      h('code', { id: 'secret-value' }, secret),
      ' ',
      h('button', { type: 'button', onclick: () => void navigator.clipboard?.writeText(secret) }, 'Copy'),
      ' ',
      h('button', { type: 'button', onclick: () => (secretBox.hidden = true) }, 'Hide'),
    );
    secretBox.hidden = false;
  }

  async function create(): Promise<void> {
    const hook = await api.post<Hook & { secret: string }>('/v1/hooks', { type: 'http', url: url.value });
    url.value = '';
    showSecret(`Secret of ${hook.id}`, hook.secret);
  }

  async function openExchange(hook: Hook, d: Delivery): Promise<void> {
    const x = await api.get<Exchange>(`/v1/hooks/${hook.id}/deliveries/${d.id}/exchange`);
    const headers = Object.entries(x.request.headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
    let body = x.request.body;
    try {
      body = JSON.stringify(JSON.parse(body), null, 2);
    } catch {
      // shown as sent
    }
    const r = x.response;
    replace(
      dialogBody,
      h('p', { class: 'mono' }, d.id),
      h('h4', {}, 'Request'),
      h('pre', { id: 'exchange-request' }, `${x.request.method} ${x.request.url}\n${headers}\n\n${body}`),
      h('h4', {}, 'Response'),
      r
        ? h(
            'pre',
            { id: 'exchange-response' },
            `${r.status ?? 'no answer'}${r.latency_ms !== null ? ` in ${r.latency_ms} ms` : ''} at ${when(r.sent_at)}${r.error ? `\n${r.error}` : ''}\n\n${r.body ?? ''}`,
          )
        : h('p', { id: 'exchange-response' }, 'Not sent yet.'),
    );
    dialog.showModal();
  }

  function deliveriesTable(hook: Hook, rows: Delivery[]): HTMLElement {
    if (rows.length === 0) return h('p', { class: 'muted' }, 'No deliveries yet.');
    const head = ['Event', 'Status', 'Attempts', 'Last answer', 'Latency', 'Next retry', ''].map((t) => h('th', { scope: 'col' }, t));
    return h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        { class: 'deliveries' },
        h('caption', { class: 'sr-only' }, `Recent deliveries to ${hook.url ?? hook.topic_arn ?? hook.id}`),
        h('thead', {}, h('tr', {}, ...head)),
        h(
          'tbody',
          {},
          ...rows.map((d) =>
            h(
              'tr',
              { 'data-delivery': d.id, 'data-status': d.status },
              h(
                'td',
                {},
                h('span', { class: 'mono' }, d.type),
                h('br'),
                h(
                  'small',
                  { class: 'muted', title: d.payload.transaction_hash ?? '' },
                  `#${d.event_id}${d.payload.transaction_hash ? ` ${short(d.payload.transaction_hash)}` : ''}`,
                ),
              ),
              h('td', {}, h('span', { class: `badge ${d.status}` }, d.status)),
              h('td', { class: 'num' }, d.attempts),
              h('td', { class: 'num', title: d.last_error ?? '' }, d.last_status ?? (d.last_error ? 'none' : '—')),
              h('td', { class: 'num' }, d.last_latency_ms === null ? '—' : `${d.last_latency_ms} ms`),
              h('td', {}, when(d.next_attempt_at)),
              h(
                'td',
                {},
                h(
                  'div',
                  { class: 'actions' },
                  h(
                    'button',
                    { type: 'button', 'data-key': `details-${d.id}`, onclick: () => void act(null, () => openExchange(hook, d)) },
                    'Details',
                  ),
                  h(
                    'button',
                    {
                      type: 'button',
                      'data-key': `redeliver-${d.id}`,
                      onclick: () => void act(null, async () => void (await api.post(`/v1/hooks/${hook.id}/deliveries/${d.id}/redeliver`))),
                    },
                    'Redeliver',
                  ),
                ),
              ),
            ),
          ),
        ),
      ),
    );
  }

  function card(hook: Hook, rows: Delivery[], stats: HookStats): HTMLElement {
    const target = hook.url ?? hook.topic_arn ?? '';
    return h(
      'article',
      { class: 'card', 'data-hook': hook.id, 'aria-labelledby': `t-${hook.id}` },
      h(
        'header',
        {},
        h('h3', { id: `t-${hook.id}`, class: 'mono' }, target),
        h(
          'p',
          { class: 'muted' },
          `${hook.id} · ${hook.type} · since ${when(hook.created_at)} · `,
          hook.disabled
            ? h('span', { class: 'badge dead' }, `disabled: ${hook.disabled_reason ?? ''}`)
            : h('span', { class: 'badge delivered' }, 'enabled'),
        ),
        h(
          'p',
          { class: 'actions' },
          hook.disabled
            ? h(
                'button',
                {
                  type: 'button',
                  'data-key': `enable-${hook.id}`,
                  onclick: () => void act(null, async () => void (await api.post(`/v1/hooks/${hook.id}/enable`))),
                },
                'Enable',
              )
            : null,
          hook.type === 'http'
            ? h(
                'button',
                {
                  type: 'button',
                  'data-key': `rotate-${hook.id}`,
                  onclick: () =>
                    void act(null, async () =>
                      showSecret(
                        `New secret of ${hook.id}`,
                        (await api.post<{ secret: string }>(`/v1/hooks/${hook.id}/rotate-secret`)).secret,
                      ),
                    ),
                },
                'Rotate secret',
              )
            : null,
        ),
      ),
      h(
        'figure',
        {},
        attemptsChart(stats),
        h('figcaption', {}, `Last hour: ${stats.delivered} delivered, ${stats.failed} failed attempts`),
      ),
      deliveriesTable(hook, rows),
    );
  }

  async function load(): Promise<void> {
    const hooks = await api.get<Hook[]>('/v1/hooks');
    const parts = await Promise.all(
      hooks.map(async (hook) => ({
        hook,
        rows: await api.get<Delivery[]>(`/v1/hooks/${hook.id}/deliveries?limit=${DELIVERIES_SHOWN}`),
        stats: await api.get<HookStats>(`/v1/hooks/${hook.id}/stats`),
      })),
    );
    const key = JSON.stringify(parts);
    if (key === shown) return;
    shown = key;
    if (parts.length === 0) replace(list, h('p', { class: 'muted', id: 'no-hooks' }, 'This key has no hooks.'));
    else replace(list, ...parts.map((p) => card(p.hook, p.rows, p.stats)));
  }

  return { id: 'hooks', title: 'Hooks', el, refresh, everyMs: 2000 };
}
