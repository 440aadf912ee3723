/**
 * Real chains for indexer tests, read in place from ../shared/fixtures: regtest-chain-a (every
 * block including stale ones, the C/D order in which the node connected and disconnected them,
 * and what Bitcoin Core answers per address), the first 600 mainnet blocks (blk framing), and a
 * `FixtureChain` that serves any of them through the indexer's ChainSource interface with an
 * active chain the test moves (connect, disconnect, reorg, hide a stale block), and the outputs
 * each block spent as a node's `/rest/spenttxouts` gives them (what undo asks the node for).
 */
import { readFileSync } from 'node:fs';
import { decodeBlock } from '../../src/bitcoin/block.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import type { ChainSource, ChainView } from '../../indexer/chain-source.js';
import type { SpentOutput } from '../../indexer/node-rest.js';
import { fixturePath } from './fixtures.js';
import { txJson } from '../../devnode/json-views.js';
import { writeCoreJson } from '../../devnode/core-json.js';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { applyBlock, undoBlock, type WriteContext } from '../../indexer/writer/apply.js';

export interface FixtureBlock {
  height: number;
  hash: string;
  main: boolean;
  raw: Uint8Array;
}

export interface ExpectedAddress {
  balance: number;
  history: string[];
  unspent: { transaction_hash: string; index: number; value: string; script: string; height: number; coinbase: boolean }[];
}

export interface ChainA {
  /** Every block by display hash. */
  blocks: Map<string, FixtureBlock>;
  /** Main-chain hashes by height. */
  main: string[];
  /** The node's block connects (C) and disconnects (D), in order. */
  steps: { label: 'C' | 'D'; hash: string }[];
  expected: { best_height: number; best_block_hash: string; addresses: Record<string, ExpectedAddress> };
}

let chainA: ChainA | undefined;

/** regtest-chain-a, parsed once per process. */
export function loadChainA(): ChainA {
  if (chainA) return chainA;
  const blocks = new Map<string, FixtureBlock>();
  const main: string[] = [];
  for (const line of readFileSync(fixturePath('regtest-chain-a', 'blocks.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const b = JSON.parse(line) as { height: number; hash: string; main: boolean; hex: string };
    blocks.set(b.hash, { height: b.height, hash: b.hash, main: b.main, raw: new Uint8Array(Buffer.from(b.hex, 'hex')) });
    if (b.main) main[b.height] = b.hash;
  }
  const steps: ChainA['steps'] = [];
  for (const line of readFileSync(fixturePath('regtest-chain-a', 'zmq-sequence.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const m = JSON.parse(line) as { hash: string; label: string };
    if (m.label === 'C' || m.label === 'D') steps.push({ label: m.label, hash: m.hash });
  }
  const expected = JSON.parse(readFileSync(fixturePath('regtest-chain-a', 'expected.json'), 'utf8')) as ChainA['expected'];
  chainA = { blocks, main, steps, expected };
  return chainA;
}

/** Blocks of a blk*.dat-framed file (magic, little-endian length, block), in file order. */
export function readBlkFramed(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = 0;
  while (p + 8 <= bytes.length) {
    const len = view.getUint32(p + 4, true);
    out.push(bytes.subarray(p + 8, p + 8 + len));
    p += 8 + len;
  }
  return out;
}

/** Mainnet blocks 0–599 as FixtureBlocks (heights from file order, which is chain order). */
export function loadMainnet600(): FixtureBlock[] {
  const files = ['mainnet_blk_h000000-000299.dat', 'mainnet_blk_h000300-000599.dat'];
  const raws = files.flatMap((f) => readBlkFramed(new Uint8Array(readFileSync(fixturePath('mainnet', 'chain', f)))));
  return raws.map((raw, height) => ({ height, hash: hashToHex(decodeBlock(raw).hash), main: true, raw }));
}

/** A node's active chain over a set of known blocks, moved by the test. */
export class FixtureChain implements ChainSource {
  readonly blocks = new Map<string, Uint8Array>();
  active: string[] = [];
  /** Blocks the "node" no longer serves (getBlock answers null). */
  readonly hidden = new Set<string>();
  /** Calls made, for assertions. */
  calls = 0;

  constructor(blocks: Iterable<{ hash: string; raw: Uint8Array }> = []) {
    for (const b of blocks) this.blocks.set(b.hash, b.raw);
  }

  add(hash: string, raw: Uint8Array): void {
    this.blocks.set(hash, raw);
  }

  /** Connects `hash` on top of the active chain (its parent must be the tip). */
  connect(hash: string): void {
    const raw = this.blocks.get(hash);
    if (!raw) throw new Error(`unknown block ${hash}`);
    const prev = hashToHex(decodeBlock(raw).header.prevHash);
    const tip = this.active[this.active.length - 1];
    if (this.active.length > 0 && prev !== tip) throw new Error(`block ${hash} does not extend the tip ${tip}`);
    this.active.push(hash);
  }

  /** Disconnects the tip (must be `hash` when given). */
  disconnect(hash?: string): void {
    const tip = this.active[this.active.length - 1];
    if (hash !== undefined && tip !== hash) throw new Error(`disconnect ${hash} but the tip is ${tip}`);
    this.active.pop();
  }

  /** Sets the active chain to `hashes` (heights 0..n-1). */
  setActive(hashes: readonly string[]): void {
    this.active = [...hashes];
  }

  get height(): number {
    return this.active.length - 1;
  }

  async getChainView(heights: readonly number[]): Promise<ChainView> {
    this.calls++;
    const tip = this.active[this.active.length - 1];
    if (tip === undefined) throw new Error('empty chain');
    return { bestHash: tip, height: this.active.length - 1, hashes: heights.map((h) => this.active[h] ?? null) };
  }

  async getBlockHash(height: number): Promise<string | null> {
    this.calls++;
    return this.active[height] ?? null;
  }

  async getBlock(hash: string): Promise<Uint8Array | null> {
    this.calls++;
    if (this.hidden.has(hash)) return null;
    return this.blocks.get(hash) ?? null;
  }

  /** What a node's `/rest/spenttxouts` answers: each input's prevout, found among the known blocks' outputs. */
  async getSpentTxOuts(hash: string): Promise<SpentOutput[][] | null> {
    this.calls++;
    const raw = this.hidden.has(hash) ? undefined : this.blocks.get(hash);
    if (raw === undefined) return null;
    if (this.outputs === undefined) {
      this.outputs = new Map();
      for (const b of this.blocks.values()) for (const tx of decodeBlock(b).txs) this.outputs.set(hashToHex(tx.txid), tx.outputs);
    }
    return decodeBlock(raw).txs.map((tx) =>
      tx.isCoinbase
        ? []
        : tx.inputs.map((i) => {
            const o = this.outputs!.get(hashToHex(i.prevTxid))?.[i.vout];
            if (o === undefined) throw new Error(`block ${hash} spends ${hashToHex(i.prevTxid)}:${i.vout}, in no known block`);
            return { value: o.value, script: o.script };
          }),
    );
  }
  private outputs: Map<string, readonly { value: bigint; script: Uint8Array }[]> | undefined;

  /**
   * What Core's JSON-RPC batch answers for `getrawtransaction <txid> 2 <blockhash>` (the only
   * call served: the API's confirmed transaction views, api/node-transactions.ts), as the
   * stand-in builds it (devnode/json-views.ts `txJson`, its amounts as Core prints them), from
   * the known blocks: a block the node no longer serves, or a txid not in it, is an RPC error.
   */
  async batch<T = unknown>(calls: { method: string; params?: unknown[] }[]): Promise<(T | Error)[]> {
    this.calls++;
    return Promise.all(
      calls.map(async ({ method, params = [] }) => {
        const [txid, verbosity, blockHash] = params as [string, number, string];
        if (method !== 'getrawtransaction' || verbosity !== 2) return new Error(`${method} is not served by the fixture chain`);
        const spent = await this.getSpentTxOuts(blockHash);
        const txs = decodeBlock(this.blocks.get(blockHash) ?? new Uint8Array()).txs;
        const pos = txs.findIndex((tx) => hashToHex(tx.txid) === txid);
        if (spent === null || pos < 0) return new Error('No such transaction found in the provided block.');
        const undo = spent[pos]!.map((o) => ({ ...o, height: 0, coinbase: false }));
        return JSON.parse(writeCoreJson(txJson(txs[pos]!, { undo, prevouts: true, blockHash }))) as T;
      }),
    );
  }
}

/**
 * A node for an API's confirmed transaction views (`getrawtransaction <txid> 2 <blockhash>`,
 * FixtureChain.batch) holding `blocks`; the API's other node calls are not served.
 */
export function fixtureNode(blocks: Iterable<{ hash: string; raw: Uint8Array }>) {
  const chain = new FixtureChain(blocks);
  return {
    batch: chain.batch.bind(chain),
    sendRawTransaction: () => Promise.reject(new Error('not served by the fixture chain')),
    getBlockchainInfo: () => Promise.reject(new Error('not served by the fixture chain')),
  };
}

/**
 * Indexes regtest-chain-a into `db` as the node saw it: its genesis, then every connect and
 * disconnect in the node's order (its 7 reorgs applied and undone) through applyBlock/undoBlock
 * (with `ctx`, as the run loop gives them).
 */
export async function indexChainA(db: Kysely<Database>, ctx: WriteContext = {}): Promise<ChainA> {
  const chain = loadChainA();
  const node = new FixtureChain(chain.blocks.values());
  const genesis = await applyBlock(db, decodeBlock(chain.blocks.get(chain.main[0]!)!.raw), 0, ctx);
  if (genesis.kind !== 'applied') throw new Error(`chain-a genesis: ${genesis.kind}`);
  for (const step of chain.steps) {
    const b = chain.blocks.get(step.hash)!;
    const r = step.label === 'C' ? await applyBlock(db, decodeBlock(b.raw), b.height, ctx) : await undoBlock(db, b.height, node, ctx);
    if (r.kind !== (step.label === 'C' ? 'applied' : 'undone'))
      throw new Error(`chain-a ${step.label} ${b.height} ${step.hash}: ${r.kind}`);
  }
  return chain;
}
