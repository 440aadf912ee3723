/**
 * The console (/console, docs/console.md) in a real browser: Debian's headless Chromium driven
 * by playwright-core against a whole Blockwire on the devnode (test/support/stack.ts: indexer,
 * API with the stream, delivery worker) and two webhook receivers on 127.0.0.1. Through the
 * page only: the key taken from the URL fragment (and gone from the address bar), a hook
 * registered (its secret shown once), subscriptions made; a faucet payment then shows in the
 * live tail as tx.unconfirmed, and tx.confirmed once mined, without any layout shift; the
 * receiving hook's deliveries are delivered, the failing one's show their attempts and the
 * receiver's answer, and are redelivered once it answers; another key sees none of these hooks.
 * Every request the page makes goes to the API's origin without the key in its URL; the CSP
 * header is on every asset, and the page logs no error (a CSP violation would be one).
 * Screenshots of each view go to test-results/console/ (gitignored); docs/images/console-hooks.png
 * is one of them, committed.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { HDKey } from '@scure/bip32';
import { Key } from '../../../client/keys.js';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { CHROMIUM, CHROMIUM_ARGS, describeBrowser } from '../../support/chromium.js';
import { projectRoot } from '../../support/fixtures.js';
import { startStack, type Stack } from '../../support/stack.js';

const SHOTS = join(projectRoot, 'test-results', 'console');

/** A webhook receiver whose answer the test sets. */
type Receiver = { url: string; status: number; got: string[]; server: Server };

async function receiver(status: number): Promise<Receiver> {
  const r: Receiver = { url: '', status, got: [], server: createServer() };
  r.server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      r.got.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(r.status, { 'content-type': 'text/plain' }).end(r.status === 200 ? 'ok, thanks' : 'receiver is down for maintenance');
    });
  });
  await new Promise<void>((res) => r.server.listen(0, '127.0.0.1', res));
  r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}/hooks`;
  return r;
}

describeBrowser('the console in headless Chromium', () => {
  let stack: Stack;
  let profile: string;
  let context: BrowserContext | undefined;
  let page: Page;
  let good: Receiver;
  let bad: Receiver;
  const requests: string[] = [];
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  const hookIds: string[] = [];

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const tab = async (id: string) => {
    await page.click(`#tab-${id}`);
    await page.waitForSelector(`#view-${id}:not([hidden])`);
  };

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    [good, bad] = await Promise.all([receiver(200), receiver(500)]);
    stack = await startStack({ stamping: false, config: { deliveryRescueMs: 3_600_000 } });
    profile = await mkdtemp(join(tmpdir(), 'blockwire-console-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      headless: true,
      viewport: { width: 1200, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('request', (r) => requests.push(r.url()));
    page.on('websocket', (w) => requests.push(w.url()));
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    // (a failed load is logged by Chromium without its URL: record which request it was)
    page.on('response', (r) => {
      if (r.status() >= 400) consoleErrors.push(`${r.request().method()} ${new URL(r.url()).pathname} answered ${r.status()}`);
    });
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await stack?.stop();
    for (const r of [good, bad]) {
      r?.server.closeAllConnections();
      r?.server.close();
    }
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('takes the key from the fragment, removes it from the address bar, and serves the page under its CSP', async () => {
    const res = await page.goto(`${stack.url}/console#key=${encodeURIComponent(stack.apiKey)}`);
    expect(res?.status()).toBe(200);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain(`connect-src 'self' ${stack.url.replace('http:', 'ws:')}`);
    await page.waitForSelector('#tab-chain');
    expect(page.url()).toBe(`${stack.url}/console`);
    expect(await page.evaluate(() => sessionStorage.getItem('blockwire.console.key'))).toBe(stack.apiKey);
    for (const asset of ['console.js', 'console.css', 'icon.svg']) {
      const r = await page.request.get(`${stack.url}/console/${asset}`);
      expect(r.status()).toBe(200);
      expect(r.headers()['content-security-policy']).toBe(csp);
    }
    // The chain view: the index in sync with the node, the last blocks listed.
    await page.waitForFunction(() => document.querySelector('#chain-summary')?.textContent?.includes('in sync'));
    const tip = stack.devnode.tip();
    expect(await page.textContent('#chain-summary')).toContain(`index at block ${tip.height.toLocaleString('en-US')}`);
    expect(await page.$$eval('#blocks tbody tr', (rows) => rows.length)).toBe(8);
    expect(await page.$eval('#chain-progress', (p) => [(p as HTMLProgressElement).value, (p as HTMLProgressElement).max])).toEqual([
      tip.height,
      tip.height,
    ]);
    await shot('chain');
  });

  it('registers hooks (the secret shown once) and subscribes two addresses to them', async () => {
    await tab('hooks');
    for (const r of [good, bad]) {
      await page.fill('#hook-url', r.url);
      await page.click('#view-hooks form.inline button[type=submit]');
      await page.waitForFunction((n) => document.querySelectorAll('[data-hook]').length === n, hookIds.length + 1);
      expect(await page.textContent('#secret-value')).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      hookIds.push(await page.$eval(`[data-hook]:has(h3:text-is("${r.url}"))`, (e) => (e as HTMLElement).dataset.hook!));
    }
    await tab('lists');
    const addresses = [Key.random('regtest').address('p2wpkh'), Key.random('regtest').address('p2tr')];
    for (const [i, address] of addresses.entries()) {
      await page.fill('#sub-target', address);
      await page.waitForSelector(`#sub-hook option[value="${hookIds[i]}"]`, { state: 'attached' });
      await page.selectOption('#sub-hook', hookIds[i]!);
      await page.click('#view-lists form.inline:has(#sub-target) button[type=submit]');
      await page.waitForSelector(`#subscriptions td:text-is("${address}")`);
    }
    // A wallet tracked from a descriptor: its balance and next address; then deleted, as a
    // third subscription is.
    const tpub = HDKey.fromMasterSeed(randomBytes(32), bip32Versions('regtest')).derive("m/84'/1'/0'").publicExtendedKey;
    await page.fill('#wallet-descriptor', `wpkh(${tpub}/<0;1>/*)`);
    await page.click('#view-lists form.inline:has(#wallet-descriptor) button[type=submit]');
    await page.waitForSelector('#wallets tr[data-wallet]');
    const wallet = await page.textContent('#wallets tr[data-wallet]');
    expect(wallet).toContain('0.00000000 BTC');
    expect(wallet).toMatch(/bcrt1q[a-z0-9]+0\/0/); // the first receive address, path 0/0
    await page.fill('#sub-target', 'chain');
    await page.selectOption('#sub-hook', '');
    await page.click('#view-lists form.inline:has(#sub-target) button[type=submit]');
    await page.waitForSelector('#subscriptions td:text-is("the chain (blocks)")');
    await shot('subscriptions');
    await page.click('#subscriptions tr:has(td:text-is("the chain (blocks)")) button');
    await page.click('#wallets tr[data-wallet] button');
    await page.waitForSelector('#wallets td:text-is("No wallets.")');
    await page.waitForFunction(() => !document.querySelector('#subscriptions')?.textContent?.includes('the chain (blocks)'));
    expect(await page.$$eval('#subscriptions tr[data-subscription]', (rows) => rows.length)).toBe(2);
    (globalThis as { addresses?: string[] }).addresses = addresses;
  });

  it('shows a faucet payment in the live tail as tx.unconfirmed, then tx.confirmed, with no layout shift', async () => {
    const [toGood, toBad] = (globalThis as { addresses?: string[] }).addresses!;
    await tab('tail');
    await page.waitForFunction(() => document.querySelector('#tail-status')?.textContent?.startsWith('Live'));
    await page.evaluate(() => {
      const w = window as unknown as { shift: number };
      w.shift = 0;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries() as (PerformanceEntry & { value: number; hadRecentInput: boolean })[])
          if (!e.hadRecentInput) w.shift += e.value;
      }).observe({ type: 'layout-shift', buffered: false });
    });
    const paid = await stack.devnode.wallet.send(toGood!, 150_000n);
    const failing = await stack.devnode.wallet.send(toBad!, 70_000n);
    await page.waitForSelector(`#tail li[data-type="tx.unconfirmed"][data-tx="${paid}"]`, { timeout: 30_000 });
    await page.waitForSelector(`#tail li[data-type="tx.unconfirmed"][data-tx="${failing}"]`, { timeout: 30_000 });
    await stack.mine(1);
    await page.waitForSelector(`#tail li[data-type="tx.confirmed"][data-tx="${paid}"]`, { timeout: 30_000 });
    const order = await page.$$eval(`#tail li[data-tx="${paid}"]`, (rows) => rows.map((r) => (r as HTMLElement).dataset.type));
    expect(order).toEqual(['tx.unconfirmed', 'tx.confirmed']); // newest last
    expect(await page.textContent(`#tail li[data-type="tx.confirmed"][data-tx="${paid}"]`)).toContain('0.00150000 BTC');
    expect(await page.evaluate(() => (window as unknown as { shift: number }).shift)).toBe(0);
    await shot('tail');
    // Resumed after the last event seen: what happened while the tab was elsewhere shows on return.
    const seq = await page.evaluate(() => sessionStorage.getItem('blockwire.console.after'));
    expect(Number(seq)).toBeGreaterThan(0);
    await page.goto('about:blank');
    await stack.mine(1);
    await page.goto(`${stack.url}/console`);
    await page.waitForSelector(`#tail li[data-type="tx.confirmations"][data-tx="${paid}"]`, { timeout: 30_000 });
    await page.waitForFunction((s) => document.querySelector('#tail-status')?.textContent === `Live — resumed after event ${s}`, seq);
    expect(
      await page.$$eval('#tail li[data-tx]', (rows) =>
        Math.min(...rows.map((r) => Number(r.querySelector('.seq')!.textContent!.slice(1)))),
      ),
    ).toBeGreaterThan(Number(seq));
    (globalThis as { txids?: string[] }).txids = [paid, failing];
  });

  it("shows the receiving hook's deliveries delivered and the failing one's attempts, then redelivers it once it answers", async () => {
    const [paid, failing] = (globalThis as { txids?: string[] }).txids!;
    await tab('hooks');
    const goodRow = `[data-hook="${hookIds[0]}"] tr[data-status="delivered"]:has(small[title="${paid}"])`;
    await page.waitForSelector(goodRow, { timeout: 30_000 });
    expect(good.got.some((b) => b.includes(paid!))).toBe(true);
    const badRow = `[data-hook="${hookIds[1]}"] tr[data-status="pending"]:has(small[title="${failing}"])`;
    await page.waitForSelector(badRow, { timeout: 30_000 });
    const cells = await page.$$eval(`${badRow} td`, (tds) => tds.map((td) => td.textContent));
    expect(cells.slice(1, 4)).toEqual(['pending', expect.stringMatching(/^[1-9]\d*$/), '500']);
    await page.waitForFunction(
      (id) => document.querySelector(`[data-hook="${id}"] figcaption`)?.textContent?.match(/[1-9]\d* failed/),
      hookIds[1],
    );
    await shot('hooks');

    // The request and the receiver's answer, in a dialog.
    await page.click(`${badRow} button:text-is("Details")`);
    await page.waitForSelector('#exchange[open]');
    expect(await page.textContent('#exchange-request')).toContain(`POST ${bad.url}`);
    expect(await page.textContent('#exchange-request')).toContain(failing!);
    expect(await page.textContent('#exchange-response')).toMatch(/^500 in \d+ ms/);
    expect(await page.textContent('#exchange-response')).toContain('receiver is down for maintenance');
    await shot('delivery');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#exchange:not([open])', { state: 'attached' });

    bad.status = 200;
    const id = await page.$eval(badRow, (tr) => (tr as HTMLElement).dataset.delivery!);
    await page.click(`${badRow} button:text-is("Redeliver")`);
    await page.waitForSelector(`[data-hook="${hookIds[1]}"] tr[data-delivery="${id}"][data-status="delivered"]`, { timeout: 30_000 });
    expect(await page.textContent(`[data-hook="${hookIds[1]}"] tr[data-delivery="${id}"]`)).toContain('200');
  });

  it("is usable on a phone's screen: nothing wider than the viewport", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const v of ['chain', 'hooks', 'lists', 'tail']) {
      await tab(v);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), `the ${v} view's width`).toBeLessThanOrEqual(390);
    }
    await tab('hooks');
    await shot('phone-hooks');
    await page.setViewportSize({ width: 1200, height: 900 });
  });

  it('another key sees none of these hooks', async () => {
    const other = await stack.newApiKey('console-other');
    await page.click('#forget');
    await page.fill('#key', other);
    await page.click('.key-form button[type=submit]');
    await tab('hooks');
    await page.waitForSelector('#no-hooks');
    const text = (await page.textContent('#view-hooks')) ?? '';
    for (const id of hookIds) expect(text).not.toContain(id);
    expect(text).not.toContain(good.url);
    await shot('other-key');
  });

  it("sent every request to the API's origin, never with the key in a URL, and logged no error", () => {
    const ws = stack.url.replace('http:', 'ws:');
    expect(requests.length).toBeGreaterThan(10);
    for (const url of requests) {
      expect(url.startsWith(`${stack.url}/`) || url.startsWith(`${ws}/`)).toBe(true);
      expect(url).not.toContain(stack.apiKey);
    }
    expect(pageErrors).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
