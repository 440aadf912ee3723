/**
 * The console's entry (bundled into /console/console.js, docs/console.md): takes a key from the
 * URL fragment or the form, checks it with a read of the API, and shows the views — chain,
 * hooks, subscriptions and wallets, the live tail — one at a time, refreshing the one shown.
 * Every request goes to the page's own origin with the key in the `apiKey` header.
 * @module
 */
import { createApi, ApiError } from './api.js';
import { chainView } from './chain.js';
import { h, replace } from './dom.js';
import { hooksView } from './hooks.js';
import { storedKey, storeKey, takeKeyFromFragment } from './key.js';
import { listsView } from './lists.js';
import { tailView } from './tail.js';
import type { View } from './view.js';

const SHOWN = 'blockwire.console.view';
const AFTER = 'blockwire.console.after';

const app = document.getElementById('app')!;
const notice = h('p', { id: 'notice', class: 'notice', role: 'alert' });
let teardown: (() => void) | undefined;

function notify(message: string): void {
  notice.textContent = message;
}

function keyForm(message?: string): void {
  teardown?.();
  const input = h('input', { id: 'key', type: 'password', required: true, autocomplete: 'off', spellcheck: false, placeholder: 'bw_…' });
  const form = h(
    'form',
    {
      class: 'key-form',
      onsubmit: (e) => {
        e.preventDefault();
        sessionStorage.removeItem(AFTER);
        void open(input.value.trim());
      },
    },
    h('h2', {}, 'Open the console'),
    h(
      'p',
      {},
      'Enter an API key. It stays in this tab (session storage) and is sent only in the apiKey header of this server’s API; you see what the key may see.',
    ),
    h('label', { for: 'key' }, 'API key'),
    input,
    h('button', { type: 'submit' }, 'Open'),
  );
  notify(message ?? '');
  replace(app, header(null), notice, h('main', { id: 'main' }, form));
  input.focus();
}

function header(prefix: string | null): HTMLElement {
  return h(
    'header',
    { class: 'top' },
    h('h1', {}, 'Blockwire console'),
    prefix
      ? h(
          'p',
          { class: 'who' },
          `Key ${prefix}…`,
          ' ',
          h(
            'button',
            {
              type: 'button',
              id: 'forget',
              onclick: () => {
                storeKey(null);
                sessionStorage.removeItem(AFTER);
                keyForm();
              },
            },
            'Forget key',
          ),
        )
      : null,
  );
}

async function open(key: string): Promise<void> {
  const api = createApi(key);
  try {
    await api.get('/v1/subscriptions?limit=1');
  } catch (err) {
    storeKey(null);
    return keyForm(
      err instanceof ApiError && err.status === 401
        ? 'That key is not valid here.'
        : `The API did not answer: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  storeKey(key);
  const tail = tailView(api, key);
  const views: View[] = [chainView(api), hooksView(api, notify), listsView(api, notify), tail];
  let current = views.find((v) => v.id === sessionStorage.getItem(SHOWN)) ?? views[0]!;
  let timer: number | undefined;
  let closed = false;
  const tabs = views.map((v) =>
    h(
      'button',
      {
        type: 'button',
        id: `tab-${v.id}`,
        class: 'tab',
        'aria-controls': `view-${v.id}`,
        onclick: () => show(v),
      },
      v.title,
    ),
  );
  const panels = views.map((v) => h('div', { id: `view-${v.id}`, class: 'panel', hidden: true }, v.el));

  async function tick(): Promise<void> {
    const v = current;
    if (closed) return;
    try {
      await v.refresh();
      if (notice.textContent?.startsWith('Refresh failed')) notify('');
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return keyForm('The key was refused (revoked?).');
      notify(`Refresh failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!closed && v === current && v.everyMs > 0) timer = window.setTimeout(() => void tick(), v.everyMs);
  }

  function show(v: View): void {
    current = v;
    sessionStorage.setItem(SHOWN, v.id);
    views.forEach((x, i) => {
      panels[i]!.hidden = x !== v;
      tabs[i]!.setAttribute('aria-current', x === v ? 'page' : 'false');
    });
    clearTimeout(timer);
    void tick();
  }

  replace(app, header(key.slice(0, 11)), h('nav', { 'aria-label': 'Views' }, ...tabs), notice, h('main', { id: 'main' }, ...panels));
  notify('');
  tail.start();
  teardown = () => {
    closed = true;
    clearTimeout(timer);
    tail.stop();
  };
  show(current);
}

takeKeyFromFragment();
const key = storedKey();
if (key) void open(key);
else keyForm();
