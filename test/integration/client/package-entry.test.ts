/**
 * The published entry: `npm run build:client` emits dist/client, and `import … from
 * 'blockwire/client'` (the package's `exports`) loads and works in plain Node — no tsx, no loader
 * flags — and the emitted code imports nothing but its own files and the declared dependencies.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildClient } from '../../support/client-build.js';
import { projectRoot } from '../../support/fixtures.js';

const run = promisify(execFile);
const dist = join(projectRoot, 'dist', 'client');

beforeAll(async () => {
  await buildClient();
}, 180_000);

describe('blockwire/client package entry', () => {
  it('emits ES modules and declarations, importing only its own files and allowed packages', async () => {
    const files = await readdir(dist);
    expect(files).toContain('index.js');
    expect(files).toContain('index.d.ts');
    const pkg = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8')) as { exports: Record<string, { import: string; types: string }> };
    expect(pkg.exports['./client']).toEqual({ types: './dist/client/index.d.ts', import: './dist/client/index.js' });
    const allowed = /^(\.\/[\w-]+\.js|@scure\/(base|btc-signer)|@noble\/(curves|hashes)\/[\w.-]+\.js)$/;
    for (const f of files.filter((n) => n.endsWith('.js'))) {
      const src = await readFile(join(dist, f), 'utf8');
      const specifiers = [...src.matchAll(/^(?:import|export)[^'"]*from\s+['"]([^'"]+)['"]/gm), ...src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]!);
      for (const s of specifiers) expect(s, `${f} imports ${s}`).toMatch(allowed);
      expect(src, f).not.toMatch(/\b(process\.\w|Buffer\.\w|require\()/);
    }
  });

  it('imports and works in plain Node (no tsx)', async () => {
    const script = `
      import assert from 'node:assert/strict';
      import { Key, BlockwireClient, createMultisig, encodeWif, decodeWif, randomPrivateKey, markerScript, parseMarkerScript,
               planTransaction, keySource, addressToScript, getNetwork, signPsbt, finalizePsbt, DustError } from 'blockwire/client';
      const k = Key.random('regtest');
      assert.match(k.address('p2tr'), /^bcrt1p/);
      const secret = randomPrivateKey();
      assert.deepEqual(decodeWif(encodeWif(secret, 'main'), 'main').privateKey, secret);
      const ms = createMultisig({ m: 1, publicKeys: [k.publicKey], type: 'p2sh-p2wsh', network: 'regtest' });
      assert.match(ms.address, /^2/);
      const m = { quantities: [300n, 0n, 624485n], metadata: Uint8Array.of(0x12, 0x34, 0x56, 0x78) };
      assert.deepEqual(parseMarkerScript(markerScript(m)), m);
      const source = keySource(k, 'p2wpkh', 'regtest');
      const plan = planTransaction({ outputs: [{ script: addressToScript(ms.address, 'regtest'), amount: 10000n }],
        candidates: [{ txid: '11'.repeat(32), vout: 0, value: 50000n, confirmations: 1, source }], feeRate: 1n,
        changeAddress: source.address, network: getNetwork('regtest') });
      assert.equal(plan.inputs.length, 1);
      assert.throws(() => planTransaction({ ...{ outputs: [{ script: source.script, amount: 1n }], candidates: [], feeRate: 1n, changeAddress: source.address, network: getNetwork('regtest') } }), DustError);
      const c = new BlockwireClient({ url: 'http://127.0.0.1:9', apiKey: 'bw_x', network: 'regtest' });
      assert.equal(c.root, 'http://127.0.0.1:9/v1');
      console.log('ok');
    `;
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // vitest's loader hooks must not help
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: projectRoot, env, timeout: 60_000 });
    expect(stdout.trim()).toBe('ok');
  });
});
