import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeTx } from '../../../src/bitcoin/encode.js';
import { bytesToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { nullDataScript, p2pkhScript } from '../../../src/bitcoin/script.js';
import { describeFixtures, fixturePath, projectRoot } from '../../support/fixtures.js';
import { readRpcFixture } from './fixture-blocks.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI (`node bin/blockwire.js decode …`), optionally with stdin. */
function decode(args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [join(projectRoot, 'bin', 'blockwire.js'), 'decode', ...args],
      { cwd: projectRoot, maxBuffer: 256 << 20 },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
    if (stdin !== undefined) child.stdin!.end(stdin);
    else child.stdin!.end();
  });
}

type TxJson = {
  txid: string;
  wtxid: string;
  coinbase: boolean;
  inputs: { txid: string; vout: number }[];
  outputs: { index: number; value: string; script: string; type: string; address: string[]; data?: string }[];
};
type BlockJson = { hash: string; prev_hash: string; merkle_root: string; time: string; height: number | null; transactions: TxJson[] };

describeFixtures('blockwire decode (the real command)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'blockwire-decode-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('decodes a raw block file: the fields Core gives for signet 31500, with addresses for --network signet', async () => {
    const rpc = readRpcFixture<{
      hash: string;
      height: number;
      merkleroot: string;
      previousblockhash: string;
      time: number;
      tx: string[];
      block: string;
    }>('electrumx_block_signet_h31500.json');
    const raw = join(dir, 'signet.raw');
    await writeFile(raw, hexToBytes(rpc.block));
    const hexFile = join(dir, 'signet.hex');
    await writeFile(hexFile, rpc.block + '\n');
    const [fromRaw, fromHexFile] = await Promise.all([decode([raw, '--network', 'signet']), decode([hexFile, '--network=signet'])]);
    expect(fromRaw.stderr).toBe('');
    expect(fromRaw.code).toBe(0);
    expect(fromHexFile.stdout).toBe(fromRaw.stdout);
    const block = JSON.parse(fromRaw.stdout) as BlockJson;
    expect(Object.keys(block)).toEqual(['hash', 'prev_hash', 'merkle_root', 'time', 'height', 'transactions']);
    expect(block.hash).toBe(rpc.hash);
    expect(block.prev_hash).toBe(rpc.previousblockhash);
    expect(block.merkle_root).toBe(rpc.merkleroot);
    expect(block.time).toBe(new Date(rpc.time * 1000).toISOString().replace('.000Z', 'Z'));
    expect(block.height).toBe(rpc.height);
    expect(block.transactions.map((t) => t.txid)).toEqual(rpc.tx);
    const coinbase = block.transactions[0]!;
    expect(Object.keys(coinbase)).toEqual(['txid', 'wtxid', 'coinbase', 'inputs', 'outputs']);
    expect(coinbase.coinbase).toBe(true);
    expect(coinbase.inputs).toEqual([{ txid: '0'.repeat(64), vout: 4294967295 }]);
    expect(block.transactions.slice(1).every((t) => !t.coinbase)).toBe(true);
    const addresses = block.transactions.flatMap((t) => t.outputs.flatMap((o) => o.address));
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every((a) => a.startsWith('tb1') || /^[mn2]/.test(a))).toBe(true);
  });

  it('decodes a transaction given as hex: outputs as getblock verbosity 2 shows them', async () => {
    type Vout = { value: number; n: number; scriptPubKey: { hex: string; type: string; addresses?: string[] } };
    const rpc = readRpcFixture<{
      tx: { txid: string; hash: string; hex: string; vin: { txid?: string; vout?: number }[]; vout: Vout[] }[];
    }>('etl_getblock_v2_mainnet_h50001.json');
    const t = rpc.tx[1]!;
    const run = await decode([t.hex]);
    expect(run.code).toBe(0);
    const tx = JSON.parse(run.stdout) as TxJson;
    expect(tx.txid).toBe(t.txid);
    expect(tx.wtxid).toBe(t.hash);
    expect(tx.coinbase).toBe(false);
    expect(tx.inputs).toEqual(t.vin.map((i) => ({ txid: i.txid, vout: i.vout })));
    expect(tx.outputs).toEqual(
      t.vout.map((v) => ({
        index: v.n,
        value: String(Math.round(v.value * 1e8)),
        script: v.scriptPubKey.hex,
        type: v.scriptPubKey.type,
        address: v.scriptPubKey.addresses ?? [],
      })),
    );
  });

  it('shows OP_RETURN payloads, reads stdin, and prints blk-framed files as an array', async () => {
    const tx = encodeTx({
      version: 2,
      inputs: [{ prevTxid: new Uint8Array(32).fill(1), vout: 3, scriptSig: new Uint8Array(0), sequence: 0xffffffff }],
      outputs: [
        { value: 0n, script: nullDataScript([hexToBytes('deadbeef'), hexToBytes('cafe')]) },
        { value: 546n, script: p2pkhScript(new Uint8Array(20).fill(2)) },
      ],
      locktime: 0,
    });
    const [viaStdin, framed] = await Promise.all([
      decode(['-', '--network', 'regtest'], bytesToHex(tx)),
      decode([fixturePath('mainnet', 'blocks', 'mainnet_h277647.blkframed.dat')]),
    ]);
    expect(viaStdin.code).toBe(0);
    const out = (JSON.parse(viaStdin.stdout) as TxJson).outputs;
    expect(out[0]).toEqual({ index: 0, value: '0', script: '6a04deadbeef02cafe', type: 'nulldata', address: [], data: 'deadbeefcafe' });
    expect(out[1]!.type).toBe('pubkeyhash');
    expect(out[1]!.value).toBe('546');
    expect(out[1]!.address[0]!.startsWith('m')).toBe(true);
    expect(framed.code).toBe(0);
    const blocks = JSON.parse(framed.stdout) as BlockJson[];
    expect(blocks.length).toBe(1);
    expect(blocks[0]!.hash.startsWith('0000000000000000054a')).toBe(true);
    expect(blocks[0]!.transactions.length).toBe(213);
  });

  it('reports errors on stderr with a non-zero exit', async () => {
    const [garbage, missing, network, none] = await Promise.all([
      decode(['00ff']),
      decode([join(dir, 'missing.bin')]),
      decode(['00', '--network', 'mainnet']),
      decode([]),
    ]);
    expect(garbage.code).toBe(1);
    expect(garbage.stdout).toBe('');
    expect(garbage.stderr).toBe(
      'blockwire decode: not a block (truncated block header: needs 80 bytes at offset 0, 2 left) nor a transaction (truncated transaction version: needs 4 bytes at offset 0, 2 left)\n',
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`blockwire decode: '${join(dir, 'missing.bin')}' is neither a file nor hex\n`);
    expect(network.code).toBe(2);
    expect(network.stderr).toBe("blockwire decode: unknown network 'mainnet' (expected main, test, testnet4, signet or regtest)\n");
    expect(none.code).toBe(2);
    expect(none.stderr.startsWith('blockwire decode: expected one FILE, HEX or -, got 0')).toBe(true);
  });

  it('rejects a truncated block file', async () => {
    const path = join(dir, 'cut.raw');
    await writeFile(path, hexToBytes(readRpcFixture<{ block: string }>('electrumx_block_signet_h31500.json').block.slice(0, -10)));
    const run = await decode([path]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'blockwire decode: not a block (truncated witness item: needs 1 byte at offset 523, 0 left) nor a transaction (input count 195 needs at least 7995 bytes at offset 5, 518 left)\n',
    );
  });
});

describe('decode command usage', () => {
  it('prints its usage with --help', async () => {
    const run = await decode(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout.startsWith('usage: blockwire decode FILE|HEX|-')).toBe(true);
  });
});
