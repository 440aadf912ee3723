/**
 * The SDK in a real browser: the built package (client/dist, `npm run build:client`) bundled by
 * esbuild (installed with tsx) for the browser platform — no Node polyfills, so any `node:`
 * import would fail here and the page has no Node global — and loaded into headless Chromium
 * (Debian's /usr/bin/chromium driven by playwright-core). In the page: keys, WIF, addresses,
 * multisig, planning and offline signing give exactly what the same SDK computes in Node; then
 * the real API client and the WebSocket stream run against a whole Blockwire on the devnode
 * (test/support/stack.ts), called cross-origin: the page comes from a server of its own on
 * another port, which the stack's API_CORS_ORIGINS allows (a page on an origin not listed cannot
 * read the API's answers). The page must log no console error beyond the browser's notes on the
 * deliberate 401 and 404.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hex } from '@scure/base';
import { build } from 'esbuild';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as node from '../../../client/index.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { buildClient, clientDir } from '../../support/client-build.js';
import { projectRoot } from '../../support/fixtures.js';
import { startStack, type Stack } from '../../support/stack.js';
import { CHROMIUM, CHROMIUM_ARGS, describeBrowser } from '../../support/chromium.js';

type Sdk = typeof node;
/**
 * What the page's globals hold: the SDK its module script exposes, and the stream's events.
 * (Functions passed to page.evaluate run in the page: they can use types, not this module's values.)
 */
type PageGlobals = { sdk: Sdk; sdkReady?: boolean; events?: node.StreamEvent[] };

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>@blockwire/client</title>
<script type="module">import * as sdk from '/client.js'; window.sdk = sdk; window.sdkReady = true;</script></head><body></body></html>`;

/** The page's server: the page and the bundle, on an origin of its own. */
async function serve(bundle: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url === '/') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    if (req.url === '/client.js') return void res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(bundle);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

const originOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

describeBrowser('@blockwire/client in headless Chromium', () => {
  let stack: Stack;
  let server: Server;
  let origin: string;
  let profile: string;
  let context: BrowserContext | undefined;
  let page: Page;
  let bundleInputs: string[] = [];
  const consoleErrors: { text: string; url: string }[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await buildClient();
    const bundled = await build({
      entryPoints: [join(clientDir, 'dist', 'index.js')],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      absWorkingDir: projectRoot,
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    bundleInputs = Object.keys(bundled.metafile.inputs); // relative to projectRoot
    server = await serve(bundled.outputFiles[0]!.text);
    origin = originOf(server);
    stack = await startStack({ stamping: false, worker: false, config: { apiCorsOrigins: [origin] } });
    profile = await mkdtemp(join(tmpdir(), 'blockwire-chromium-'));
    // A fresh profile: Playwright takes it as launchPersistentContext's userDataDir (its launch()
    // refuses a --user-data-dir argument).
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push({ text: m.text(), url: m.location().url });
    });
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => (window as unknown as PageGlobals).sdkReady === true, undefined, { timeout: 30_000 });
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    server?.closeAllConnections();
    if (server) await new Promise<void>((r) => server.close(() => r()));
    await stack?.stop();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('bundles the built package for the browser from its own files and @scure/@noble only; the page has no Node globals', async () => {
    expect(bundleInputs.length).toBeGreaterThan(1);
    for (const input of bundleInputs)
      expect(input).toMatch(
        /^(client\/dist\/[\w-]+\.js|node_modules\/(@scure\/(base|bip32|btc-signer)|@noble\/(curves|hashes)|micro-packed)\/)/,
      );
    const env = await page.evaluate(() => ({
      userAgent: navigator.userAgent,
      globals: ['process', 'Buffer', 'require', 'global', 'setImmediate'].filter((n) => n in globalThis),
      exports: Object.keys((window as unknown as PageGlobals).sdk).length,
    }));
    expect(env.userAgent).toMatch(/HeadlessChrome|Chrome\//);
    expect(env.globals).toEqual([]);
    expect(env.exports).toBe(Object.keys(node).length);
  });

  it('keys, WIF and the four address types equal what the SDK computes in Node', async () => {
    const secret = node.randomPrivateKey();
    const fromPage = await page.evaluate(
      ({ secretHex }) => {
        const sdk = (window as unknown as PageGlobals).sdk;
        const bytes = Uint8Array.from(secretHex.match(/../g)!.map((b) => parseInt(b, 16)));
        const key = new sdk.Key(bytes, 'regtest');
        const random = sdk.Key.random('regtest');
        const roundTrip = sdk.decodeWif(random.toWif(), 'regtest');
        return {
          given: { wif: key.toWif(), addresses: sdk.ADDRESS_TYPES.map((t) => key.address(t)), mainWif: sdk.encodeWif(bytes, 'main') },
          random: {
            wif: random.toWif(),
            addresses: Object.fromEntries(sdk.ADDRESS_TYPES.map((t) => [t, random.address(t)])),
            roundTrip: roundTrip.privateKey.every((b, i) => b === random.privateKey[i]) && roundTrip.compressed,
            valid: sdk.isValidAddress(random.address('p2tr'), 'regtest') && !sdk.isValidAddress(random.address('p2tr'), 'main'),
            wrongNetwork: (() => {
              try {
                sdk.decodeWif(random.toWif(), 'main');
                return '';
              } catch (err) {
                return String(err);
              }
            })(),
          },
        };
      },
      { secretHex: hex.encode(secret) },
    );
    const key = new node.Key(secret, 'regtest');
    expect(fromPage.given).toEqual({
      wif: key.toWif(),
      addresses: node.ADDRESS_TYPES.map((t) => key.address(t)),
      mainWif: node.encodeWif(secret, 'main'),
    });
    expect(fromPage.given.mainWif).toMatch(/^[KL]/);

    const random = node.Key.fromWif(fromPage.random.wif, 'regtest');
    expect(fromPage.random.addresses).toEqual(Object.fromEntries(node.ADDRESS_TYPES.map((t) => [t, random.address(t)])));
    expect(fromPage.random.addresses.p2pkh).toMatch(/^[mn][1-9A-HJ-NP-Za-km-z]{25,34}$/);
    expect(fromPage.random.addresses['p2sh-p2wpkh']).toMatch(/^2[1-9A-HJ-NP-Za-km-z]{25,34}$/);
    expect(fromPage.random.addresses.p2wpkh).toMatch(/^bcrt1q[02-9ac-hj-np-z]{38}$/);
    expect(fromPage.random.addresses.p2tr).toMatch(/^bcrt1p[02-9ac-hj-np-z]{58}$/);
    expect(fromPage.random.roundTrip).toBe(true);
    expect(fromPage.random.valid).toBe(true);
    expect(fromPage.random.wrongNetwork).toMatch(/another network/);
  });

  it('multisig addresses, a transaction plan and an offline-signed transaction equal Node’s', async () => {
    const keys = [node.Key.random('regtest'), node.Key.random('regtest'), node.Key.random('regtest')];
    const wifs = keys.map((k) => k.toWif());
    const utxo = { txid: hex.encode(node.randomPrivateKey()), vout: 1, value: 100_000n, confirmations: 3 };
    const payee = node.Key.random('regtest').address('p2tr');
    /** The same computation, run in the page and in Node with the SDK passed in. */
    const compute = async (sdk: Sdk, args: { wifs: string[]; txid: string; payee: string }) => {
      const ks = args.wifs.map((w) => sdk.Key.fromWif(w, 'regtest'));
      const multisig = sdk.MULTISIG_TYPES.map(
        (type) => sdk.createMultisig({ m: 2, publicKeys: ks.map((k) => k.publicKey), type, network: 'regtest' }).address,
      );
      const source = sdk.keySource(ks[0]!, 'p2wpkh', 'regtest');
      const candidate = { txid: args.txid, vout: 1, value: 100_000n, confirmations: 3, source };
      const plan = sdk.planTransaction({
        outputs: [{ script: sdk.addressToScript(args.payee, 'regtest'), amount: 30_000n }],
        candidates: [candidate],
        feeRate: 2n,
        changeAddress: source.address,
        network: sdk.getNetwork('regtest'),
        random: () => 0.5, // the same output order on both sides
      });
      let dust = '';
      try {
        sdk.planTransaction({
          outputs: [{ script: source.script, amount: 1n }],
          candidates: [candidate],
          feeRate: 1n,
          changeAddress: source.address,
          network: sdk.getNetwork('regtest'),
        });
      } catch (err) {
        dust = err instanceof sdk.DustError ? err.code : String(err);
      }
      // A builder with no server: the output is given, the key signs, nothing is sent.
      const offline = {
        network: sdk.getNetwork('regtest'),
        reservations: new sdk.Reservations(),
        listUnspentOutputs: async () => [],
        sendTransaction: async () => '',
      };
      const signed = await sdk
        .createTransactionBuilder(offline, { feeRate: 2, shuffleOutputs: false })
        .spend({ txid: args.txid, vout: 1, value: 100_000n, confirmations: 3 }, source)
        .to(args.payee, 30_000n)
        .build();
      return {
        multisig,
        plan: {
          inputs: plan.inputs.map((i) => `${i.txid}:${i.vout}`),
          fee: String(plan.fee),
          changeIndex: plan.changeIndex,
          vsize: plan.estimatedVsize,
          outputs: plan.outputs.map((o) => String(o.amount)),
        },
        dust,
        signed: { txid: signed.txid, hex: signed.hex, fee: String(signed.fee) },
      };
    };
    const args = { wifs, txid: utxo.txid, payee };
    const inPage = await page.evaluate(
      // The page gets the function's source: it runs against the bundled SDK there.
      ({ fn, a }) =>
        (new Function('sdk', 'a', `return (${fn})(sdk, a)`) as (s: Sdk, x: typeof args) => Promise<unknown>)(
          (window as unknown as PageGlobals).sdk,
          a,
        ),
      { fn: compute.toString(), a: args },
    );
    const inNode = await compute(node, args);
    expect(inPage).toEqual(inNode);
    expect(inNode.multisig.map((a) => a.slice(0, 6))).toEqual(
      node.MULTISIG_TYPES.map((t) => (t === 'p2sh' || t === 'p2sh-p2wsh' ? expect.stringMatching(/^2/) : 'bcrt1q')),
    );
    expect(inNode.plan.inputs).toEqual([`${utxo.txid}:1`]);
    expect(inNode.dust).toBe('ERR_DUST_OUTPUT');
    expect(inNode.signed.hex).toMatch(/^02000000000101/); // version 2, segwit marker, one input
  });

  it('reads the index, gets typed errors, signs and sends a payment and streams its events through the real API', async () => {
    const payer = node.Key.random('regtest');
    await stack.devnode.wallet.send(payer.address('p2wpkh'), 100_000n);
    await stack.mine(1);
    const watched = node.Key.random('regtest').address('p2tr');
    const tip = stack.devnode.tip();

    const read = await page.evaluate(
      async ({ url, apiKey, address }) => {
        const sdk = (window as unknown as PageGlobals).sdk;
        const client = new sdk.BlockwireClient({ url, apiKey, network: 'regtest' });
        const failure = async (p: Promise<unknown>) => {
          try {
            await p;
            return null;
          } catch (err) {
            const e = err as InstanceType<Sdk['ApiError']>;
            return {
              apiError: err instanceof sdk.ApiError,
              blockwireError: err instanceof sdk.BlockwireError,
              status: e.status,
              code: e.code,
              retry: e.retry,
              bodyRetry: e.body?.retry,
            };
          }
        };
        return {
          chain: await client.getBlockchain(),
          balance: String(await client.getBalance(address)),
          unspent: (await client.listUnspentOutputs(address)).map((u) => String(u.value)),
          unknownKey: await failure(new sdk.BlockwireClient({ url, apiKey: 'bw_unknown', network: 'regtest' }).getBlockchain()),
          unknownTx: await failure(client.getTransaction('00'.repeat(32))),
        };
      },
      { url: stack.url, apiKey: stack.apiKey, address: payer.address('p2wpkh') },
    );
    expect(read.chain).toEqual({ best_block_hash: tip.hash, best_height: tip.height });
    expect(read.balance).toBe('100000');
    expect(read.unspent).toEqual(['100000']);
    expect(read.unknownKey).toEqual({
      apiError: true,
      blockwireError: true,
      status: 401,
      code: expect.any(String),
      retry: false,
      bodyRetry: false,
    });
    expect(read.unknownTx).toEqual({
      apiError: true,
      blockwireError: true,
      status: 404,
      code: 'ERR_TX_NOT_FOUND',
      retry: false,
      bodyRetry: false,
    });

    // The page subscribes, opens the stream (the platform WebSocket, the key as a query
    // parameter) and pays the watched address from the payer's key, signed in the page.
    const sent = await page.evaluate(
      async ({ url, apiKey, wif, to }) => {
        const sdk = (window as unknown as PageGlobals).sdk;
        const client = new sdk.BlockwireClient({ url, apiKey, network: 'regtest' });
        await client.createSubscription({ address: to });
        const stream = client.stream();
        await stream.ready;
        const events: node.StreamEvent[] = [];
        (window as unknown as PageGlobals).events = events;
        void (async () => {
          for await (const e of stream) {
            events.push(e);
            if (e.type === 'tx.confirmed') break;
          }
        })();
        const tx = await client.transaction({ feeRate: 2 }).to(to, 12_345n).from(sdk.Key.fromWif(wif, 'regtest'), 'p2wpkh').send();
        return { txid: tx.txid, hex: tx.hex, fee: String(tx.fee), inputs: tx.inputs.map((i) => `${i.txid}:${i.vout}`) };
      },
      { url: stack.url, apiKey: stack.apiKey, wif: payer.toWif(), to: watched },
    );
    const rpc = new BitcoindClient({ url: stack.devnode.rpcUrl });
    expect(hex.encode(await rpc.getRawTransaction(sent.txid))).toBe(sent.hex); // the node holds the page's bytes
    await stack.mine(1);
    await page.waitForFunction(
      (txid) => ((window as unknown as PageGlobals).events ?? []).some((e) => e.type === 'tx.confirmed' && e.transaction_hash === txid),
      sent.txid,
      { timeout: 30_000 },
    );
    const events = await page.evaluate(() => (window as unknown as PageGlobals).events ?? []);
    const mine = events.filter((e) => e.transaction_hash === sent.txid);
    expect(mine.at(-1)).toMatchObject({ type: 'tx.confirmed', address: watched, received: 12_345, confirmations: 1 });
    const after = await page.evaluate(
      async ({ url, apiKey, address }) =>
        String(
          await new (window as unknown as PageGlobals).sdk.BlockwireClient({ url, apiKey, network: 'regtest' }).getBalance(address, {
            minConf: 1,
          }),
        ),
      { url: stack.url, apiKey: stack.apiKey, address: watched },
    );
    expect(after).toBe('12345');
  });

  it('a page on an origin API_CORS_ORIGINS does not list cannot read the API', async () => {
    const other = await serve('');
    const page2 = await context!.newPage();
    try {
      await page2.goto(`${originOf(other)}/`);
      const r = await page2.evaluate(
        async ({ url, apiKey }) =>
          fetch(`${url}/v1/blockchain`, { headers: { apiKey } }).then(
            (res) => `read ${res.status}`,
            (err: Error) => err.name,
          ),
        { url: stack.url, apiKey: stack.apiKey },
      );
      expect(r).toBe('TypeError'); // the browser refused the answer: no Access-Control-Allow-Origin for it
      const mine = await page.evaluate(
        async ({ url, apiKey }) =>
          fetch(`${url}/v1/blockchain`, { headers: { apiKey } }).then(
            (res) => `read ${res.status}`,
            (err: Error) => err.name,
          ),
        { url: stack.url, apiKey: stack.apiKey },
      );
      expect(mine).toBe('read 200');
    } finally {
      await page2.close();
      other.closeAllConnections();
      await new Promise<void>((r) => other.close(() => r()));
    }
  });

  it('the page logged no errors but the browser’s notes on the deliberate 401 and 404', () => {
    expect(pageErrors).toEqual([]);
    const deliberate = new Set([`${stack.url}/v1/blockchain`, `${stack.url}/v1/transactions/${'00'.repeat(32)}`]);
    expect(
      consoleErrors.filter(
        (e) => !(deliberate.has(e.url) && /^Failed to load resource: the server responded with a status of (401|404)\b/.test(e.text)),
      ),
    ).toEqual([]);
  });
});
