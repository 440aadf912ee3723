/**
 * Every ```ts example of client/README.md, extracted and run as its own program against a
 * Blockwire on the devnode (mining a block a second), importing `@blockwire/client` as a user
 * would — the built package — and type-checked against its declarations. Each example gets
 * BLOCKWIRE_URL, BLOCKWIRE_API_KEY and a freshly funded FUNDED_WIF. An example passes when it
 * exits 0; its own assertions decide.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlockwireClient } from '../../../client/api.js';
import { Key } from '../../../client/keys.js';
import { loadConfig } from '../../../src/config.js';
import { buildClient } from '../../support/client-build.js';
import { projectRoot } from '../../support/fixtures.js';
import { startStack, type Stack } from '../../support/stack.js';

const run = promisify(execFile);
const dir = join(projectRoot, '.blockwire', 'readme-examples');

type Example = { title: string; code: string; file: string };

/** The ```ts blocks of a Markdown text, each titled by the heading above it. */
function extractExamples(markdown: string): Omit<Example, 'file'>[] {
  const out: Omit<Example, 'file'>[] = [];
  let title = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('#')) title = line.replace(/^#+\s*/, '');
    if (line.trim() === '```ts') {
      const body: string[] = [];
      for (i++; i < lines.length && lines[i]!.trim() !== '```'; i++) body.push(lines[i]!);
      out.push({ title, code: body.join('\n') });
    }
  }
  return out;
}

const markdown = await readFile(join(projectRoot, 'client', 'README.md'), 'utf8');
const examples: Example[] = extractExamples(markdown).map((e, n) => ({
  ...e,
  file: join(dir, `example-${String(n + 1).padStart(2, '0')}.ts`),
}));
let stack: Stack;
let client: BlockwireClient;

beforeAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  for (const e of examples) await writeFile(e.file, `${e.code}\n`);
  await buildClient();
  stack = await startStack({ mineEvery: 1 });
  client = new BlockwireClient({ url: stack.url, apiKey: stack.apiKey, network: 'regtest' });
}, 240_000);
afterAll(async () => {
  await stack?.stop();
});

/** A new key whose P2WPKH address holds five confirmed 0.01 BTC outputs. */
async function fundedKey(): Promise<Key> {
  const key = Key.random('regtest');
  const address = key.address('p2wpkh');
  const txid = await stack.devnode.wallet.send(address, 1_000_000n, {
    outputs: Array.from({ length: 4 }, () => ({ to: address, sats: 1_000_000n })),
  });
  await client.waitForTransaction(txid, { confirmations: 1, intervalMs: 200, timeoutMs: 60_000 });
  return key;
}

describe('client/README.md examples', () => {
  it('has an example per feature', () => {
    expect(examples.map((e) => e.title)).toEqual([
      'Connecting, the chain, blocks and transactions',
      'Addresses: balance, history, unspent outputs, paging',
      'Errors',
      'Keys and addresses',
      'Building, signing and sending a payment',
      'Dust, output order, and resubmitting',
      'Data (OP_RETURN) transactions',
      'Concurrent builders',
      'Multisig: all keys at once, or one signer at a time with PSBT',
      'Digital assets (Open Assets)',
      'Stamps',
      'Hooks and subscriptions',
      'The event stream',
    ]);
  });

  it("falls back to the server's default address (HOST and PORT unset) wherever BLOCKWIRE_URL is unset", () => {
    const defaults = loadConfig({});
    const fallbacks = [...markdown.matchAll(/BLOCKWIRE_URL\s*\?\?\s*'([^']+)'/g)].map((m) => m[1]);
    expect(fallbacks.length).toBeGreaterThan(0);
    for (const u of fallbacks) expect(u).toBe(`http://${defaults.host}:${defaults.port}`);
  });

  it('every example type-checks against the published declarations', async () => {
    const tsconfig = {
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
      },
      include: ['*.ts'],
    };
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const tsc = join(projectRoot, 'node_modules', '.bin', 'tsc');
    const result = await run(tsc, ['-p', join(dir, 'tsconfig.json')], { cwd: projectRoot, timeout: 120_000 }).catch(
      (err: { stdout: string }) => err,
    );
    expect(result.stdout).toBe('');
  }, 180_000);

  for (const e of examples) {
    it(`runs: ${e.title}`, async () => {
      const key = await fundedKey();
      const env: NodeJS.ProcessEnv = { ...process.env, BLOCKWIRE_URL: stack.url, BLOCKWIRE_API_KEY: stack.apiKey, FUNDED_WIF: key.toWif() };
      delete env.NODE_OPTIONS;
      const res = await run(process.execPath, ['--import', 'tsx', e.file], { cwd: projectRoot, env, timeout: 180_000 }).catch(
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
      const code = 'code' in res ? res.code : 0;
      expect(code, `${e.title}\n${res.stdout}\n${res.stderr}`).toBe(0);
    }, 240_000);
  }
});
