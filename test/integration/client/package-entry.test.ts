/**
 * The SDK as a user gets it. client/ is its own package, @blockwire/client: `npm pack` builds it
 * (its prepack script) from a copy of its folder, and the tarball is installed into a scratch
 * project outside the repository with `npm install <tarball>`. There, in plain Node (no tsx, no
 * loader flags), `import … from '@blockwire/client'` works; esbuild bundles it for browsers from
 * the scratch project's node_modules alone, and the bundle runs with the web platform's globals
 * only (no process, Buffer or require). The tarball holds dist/, README.md and package.json; its
 * dependencies are @scure and @noble, none of the server's (PostgreSQL, ZeroMQ, fastify…).
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runInNewContext } from 'node:vm';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientDir } from '../../support/client-build.js';
import { projectRoot } from '../../support/fixtures.js';

const run = promisify(execFile);
const SDK_DEPENDENCIES = ['@noble/curves', '@noble/hashes', '@scure/base', '@scure/bip32', '@scure/btc-signer'];

let work: string;
let app: string;
let tarball: string;
let packedFiles: string[] = [];
let installed: { stdout: string; stderr: string };
const env = { ...process.env };
delete env.NODE_OPTIONS; // vitest's loader hooks must not help

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'bw-client-pack-'));
  // Pack a copy, so that its prepack (tsc) never rewrites client/dist under another test's feet;
  // the copy finds TypeScript and the @scure/@noble declarations through the project's modules.
  const pkg = join(work, 'client');
  await cp(clientDir, pkg, {
    recursive: true,
    filter: (src) => !['dist', 'node_modules'].some((d) => src === join(clientDir, d) || src.startsWith(join(clientDir, d, '/'))),
  });
  await symlink(join(projectRoot, 'node_modules'), join(pkg, 'node_modules'));
  const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: pkg, env, timeout: 180_000 });
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(work, info!.filename);
  packedFiles = info!.files.map((f) => f.path);

  app = join(work, 'app');
  await mkdir(app);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  // The dependencies come from npm's cache, filled by the project's own npm ci.
  installed = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: app, env, timeout: 300_000 });
}, 480_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('@blockwire/client, packed and installed into a scratch project', () => {
  it('the tarball holds the built package, its README and package.json, no sources', async () => {
    expect(packedFiles).toContain('package.json');
    expect(packedFiles).toContain('README.md');
    expect(packedFiles).toContain('dist/index.js');
    expect(packedFiles).toContain('dist/index.d.ts');
    for (const f of packedFiles) expect(f).toMatch(/^(package\.json|README\.md|dist\/[\w-]+\.(js|d\.ts|js\.map))$/);
  });

  it('installs with no script to run: the built files are in the tarball', async () => {
    const manifest = JSON.parse(await readFile(join(app, 'node_modules', '@blockwire', 'client', 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    const installScripts = ['preinstall', 'install', 'postinstall', 'prepare'].filter((s) => manifest.scripts?.[s] !== undefined);
    expect(installScripts).toEqual([]);
    expect(`${installed.stdout}${installed.stderr}`).not.toMatch(/allowScripts|install scripts/i);
  });

  it('depends on @scure and @noble only; nothing of the server is installed', async () => {
    const manifest = JSON.parse(await readFile(join(app, 'node_modules', '@blockwire', 'client', 'package.json'), 'utf8')) as {
      name: string;
      dependencies: Record<string, string>;
    };
    expect(manifest.name).toBe('@blockwire/client');
    expect(Object.keys(manifest.dependencies).sort()).toEqual(SDK_DEPENDENCIES);
    const installed = (await readdir(join(app, 'node_modules'))).filter((n) => !n.startsWith('.'));
    expect(installed.sort()).toEqual(['@blockwire', '@noble', '@scure', 'micro-packed']);
  });

  it('the emitted code imports only its own files and @scure/@noble, and no Node global', async () => {
    const dist = join(app, 'node_modules', '@blockwire', 'client', 'dist');
    const allowed = /^(\.\/[\w-]+\.js|@scure\/(base|bip32|btc-signer)|@noble\/(curves|hashes)\/[\w.-]+\.js)$/;
    const files = (await readdir(dist)).filter((n) => n.endsWith('.js'));
    expect(files).toContain('index.js');
    for (const f of files) {
      const src = await readFile(join(dist, f), 'utf8');
      const specifiers = [
        ...src.matchAll(/^(?:import|export)[^'"]*from\s+['"]([^'"]+)['"]/gm),
        ...src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ].map((m) => m[1]!);
      for (const s of specifiers) expect(s, `${f} imports ${s}`).toMatch(allowed);
      expect(src, f).not.toMatch(/\b(process\.\w|Buffer\.\w|require\()/);
    }
  });

  it('imports and works in plain Node', async () => {
    const script = `
      import assert from 'node:assert/strict';
      import { Key, BlockwireClient, createMultisig, encodeWif, decodeWif, randomPrivateKey, markerScript, parseMarkerScript,
               planTransaction, keySource, addressToScript, getNetwork, DustError } from '@blockwire/client';
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
      assert.throws(() => planTransaction({ outputs: [{ script: source.script, amount: 1n }], candidates: [], feeRate: 1n, changeAddress: source.address, network: getNetwork('regtest') }), DustError);
      const c = new BlockwireClient({ url: 'http://127.0.0.1:9', apiKey: 'bw_x', network: 'regtest' });
      assert.equal(c.root, 'http://127.0.0.1:9/v1');
      console.log('ok');
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app, env, timeout: 60_000 });
    expect(stdout.trim()).toBe('ok');
  });

  it('bundles for browsers from the installed package alone and runs with web globals only', async () => {
    await writeFile(join(app, 'entry.js'), "export * from '@blockwire/client';\n");
    const bundled = await build({
      entryPoints: [join(app, 'entry.js')],
      bundle: true,
      format: 'iife',
      globalName: 'sdk',
      platform: 'browser',
      absWorkingDir: app,
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(bundled.metafile.inputs).filter((i) => i !== 'entry.js');
    expect(inputs.length).toBeGreaterThan(10);
    for (const input of inputs)
      expect(input).toMatch(
        /^node_modules\/(@blockwire\/client\/dist\/[\w-]+\.js|@scure\/(base|bip32|btc-signer)\/|@noble\/(curves|hashes)\/|micro-packed\/)/,
      );
    // A context with what a page offers the SDK (fetch, crypto, TextEncoder, URL…), nothing of Node.
    const page = {
      crypto: globalThis.crypto,
      TextEncoder,
      TextDecoder,
      URL,
      URLSearchParams,
      AbortSignal,
      AbortController,
      fetch,
      console,
      setTimeout,
      clearTimeout,
    };
    const out = runInNewContext(
      `${bundled.outputFiles[0]!.text}
       const k = sdk.Key.random('regtest');
       ({ p2tr: k.address('p2tr'), wif: k.toWif(), node: ['process', 'Buffer', 'require', 'global'].filter((n) => n in globalThis),
          root: new sdk.BlockwireClient({ url: 'http://127.0.0.1:9', apiKey: 'bw_x', network: 'regtest' }).root })`,
      page,
    ) as { p2tr: string; wif: string; node: string[]; root: string };
    expect(out.node).toEqual([]);
    expect(out.p2tr).toMatch(/^bcrt1p[02-9ac-hj-np-z]{58}$/);
    expect(out.root).toBe('http://127.0.0.1:9/v1');
    // The same key in Node's copy of the SDK gives the same address.
    const { Key } = await import('../../../client/keys.js');
    expect(Key.fromWif(out.wif, 'regtest').address('p2tr')).toBe(out.p2tr);
  });
});
