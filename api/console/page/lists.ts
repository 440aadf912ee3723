/**
 * Subscriptions (GET/POST /v1/subscriptions, DELETE /v1/subscriptions/{id}) and wallets
 * (GET/POST /v1/wallets, DELETE /v1/wallets/{id}, each with GET …/balance and
 * POST …/next-address without reserving): list, create, delete.
 * @module
 */
import type { Api } from './api.js';
import { btc, h, replace, short, when } from './dom.js';
import { viewLane, type View } from './view.js';

type Subscription = {
  id: string;
  type: 'address' | 'chain' | 'wallet';
  address: string | null;
  wallet?: string | null;
  action: string | null;
  confirmations: number;
  created_at: string;
};
type Wallet = { id: string; descriptors: string[]; gap_limit: number; created_at: string };
type Balance = { confirmed: number; unconfirmed: number };
type Hook = { id: string; url: string | null; topic_arn: string | null };

export function listsView(api: Api, notify: (message: string) => void): View {
  const subs = h('tbody', { id: 'subscriptions' });
  const wallets = h('tbody', { id: 'wallets' });
  const target = h('input', {
    id: 'sub-target',
    required: true,
    autocomplete: 'off',
    spellcheck: false,
    placeholder: 'bcrt1q… , wal_… or "chain"',
  });
  const hookSelect = h('select', { id: 'sub-hook' }, h('option', { value: '' }, 'stream only'));
  const confirmations = h('input', { id: 'sub-conf', type: 'number', min: 1, max: 100, value: 6, inputmode: 'numeric' });
  const descriptor = h('textarea', {
    id: 'wallet-descriptor',
    required: true,
    rows: 2,
    spellcheck: false,
    placeholder: 'wpkh([…]tpub…/<0;1>/*) or a bare xpub/tpub',
  });
  let shown = '';

  const { act, refresh } = viewLane(load, notify, () => (shown = ''));

  async function subscribe(): Promise<void> {
    const t = target.value.trim();
    const base = t === 'chain' ? { type: 'chain' } : t.startsWith('wal_') ? { wallet: t } : { address: t };
    await api.post('/v1/subscriptions', {
      ...base,
      ...(hookSelect.value ? { action: hookSelect.value } : {}),
      ...(t === 'chain' ? {} : { confirmations: Number(confirmations.value) }),
    });
    target.value = '';
  }

  async function track(): Promise<void> {
    const d = descriptor.value.trim();
    await api.post('/v1/wallets', /^[xyztuv]pub/.test(d) ? { xpub: d } : { descriptors: d.split(/\s+/) });
    descriptor.value = '';
  }

  const el = h(
    'section',
    { 'aria-labelledby': 'lists-title' },
    h('h2', { id: 'lists-title' }, 'Subscriptions and wallets'),
    h('h3', {}, 'Subscriptions'),
    h(
      'form',
      { class: 'inline', onsubmit: (e) => void act(e, subscribe) },
      h('label', { for: 'sub-target' }, 'Address, wallet id or “chain”'),
      target,
      h('label', { for: 'sub-hook' }, 'Push to'),
      hookSelect,
      h('label', { for: 'sub-conf' }, 'Confirmations'),
      confirmations,
      h('button', { type: 'submit' }, 'Subscribe'),
    ),
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, ...['What', 'Push to', 'Confirmations', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))),
        subs,
      ),
    ),
    h('h3', {}, 'Wallets'),
    h(
      'form',
      { class: 'inline', onsubmit: (e) => void act(e, track) },
      h('label', { for: 'wallet-descriptor' }, 'Descriptors or extended public key'),
      descriptor,
      h('button', { type: 'submit' }, 'Track wallet'),
    ),
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, ...['Wallet', 'Balance', 'Next address', ''].map((t) => h('th', { scope: 'col' }, t)))),
        wallets,
      ),
    ),
  );

  async function load(): Promise<void> {
    const [subList, walletList, hooks] = await Promise.all([
      api.get<Subscription[]>('/v1/subscriptions'),
      api.get<Wallet[]>('/v1/wallets'),
      api.get<Hook[]>('/v1/hooks'),
    ]);
    const details = await Promise.all(
      walletList.map(async (w) => ({
        w,
        balance: await api.get<Balance>(`/v1/wallets/${w.id}/balance`).catch(() => null),
        next: await api.post<{ address: string; path: string }>(`/v1/wallets/${w.id}/next-address`, { reserve: false }).catch(() => null),
      })),
    );
    const key = JSON.stringify([subList, details, hooks]);
    if (key === shown) return;
    shown = key;
    const chosen = hookSelect.value;
    replace(
      hookSelect,
      h('option', { value: '' }, 'stream only'),
      ...hooks.map((x) => h('option', { value: x.id, selected: x.id === chosen }, `${x.id} ${x.url ?? x.topic_arn ?? ''}`)),
    );
    replace(
      subs,
      ...(subList.length === 0
        ? [h('tr', {}, h('td', { colspan: 5, class: 'muted' }, 'No subscriptions.'))]
        : subList.map((s) =>
            h(
              'tr',
              { 'data-subscription': s.id },
              h(
                'td',
                { class: 'mono', title: s.id },
                s.type === 'chain' ? 'the chain (blocks)' : s.type === 'wallet' ? `wallet ${s.wallet ?? ''}` : (s.address ?? ''),
              ),
              h('td', { class: 'mono' }, s.action ?? 'stream only'),
              h('td', { class: 'num' }, s.type === 'chain' ? '—' : s.confirmations),
              h('td', {}, when(s.created_at)),
              h(
                'td',
                {},
                h(
                  'button',
                  {
                    type: 'button',
                    'data-key': `del-${s.id}`,
                    'aria-label': `Delete subscription ${s.id}`,
                    onclick: () => void act(null, () => api.del(`/v1/subscriptions/${s.id}`)),
                  },
                  'Delete',
                ),
              ),
            ),
          )),
    );
    replace(
      wallets,
      ...(details.length === 0
        ? [h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No wallets.'))]
        : details.map(({ w, balance, next }) =>
            h(
              'tr',
              { 'data-wallet': w.id },
              h(
                'td',
                { class: 'mono', title: w.descriptors.join('\n') },
                w.id,
                h('br'),
                h('small', { class: 'muted' }, short(w.descriptors[0] ?? '', 24)),
              ),
              h(
                'td',
                { class: 'num' },
                balance ? btc(balance.confirmed) : '—',
                balance && balance.unconfirmed !== 0
                  ? h('small', { class: 'muted' }, h('br'), `${btc(balance.unconfirmed)} unconfirmed`)
                  : null,
              ),
              h('td', { class: 'mono' }, next ? next.address : '—', next ? h('small', { class: 'muted' }, h('br'), next.path) : null),
              h(
                'td',
                {},
                h(
                  'button',
                  {
                    type: 'button',
                    'data-key': `del-${w.id}`,
                    'aria-label': `Stop tracking wallet ${w.id}`,
                    onclick: () => void act(null, () => api.del(`/v1/wallets/${w.id}`)),
                  },
                  'Delete',
                ),
              ),
            ),
          )),
    );
  }

  return { id: 'lists', title: 'Subscriptions & wallets', el, refresh, everyMs: 5000 };
}
