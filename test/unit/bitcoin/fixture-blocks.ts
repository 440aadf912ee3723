/**
 * The single-block fixtures of ../shared/fixtures/mainnet/blocks with what SOURCES.md states about
 * each (height, hash ends, transaction count, output type counts), for the bitcoin tests.
 */
import { readFileSync } from 'node:fs';
import { fixturePath } from '../../support/fixtures.js';

export interface FixtureBlock {
  file: string;
  network: 'main' | 'test';
  height: number;
  /** First and last hex characters of the block hash as SOURCES.md prints them. */
  hashStart: string;
  hashEnd: string;
  txs: number;
  /** True when the coinbase carries a BIP34 height (block version ≥ 2). */
  bip34: boolean;
  /** True when the block has segwit transactions (and so a witness commitment). */
  segwit: boolean;
  /** Output type counts stated in SOURCES.md (only those it states), by Core's type names. */
  outputTypes?: Record<string, number>;
  /**
   * Counts SOURCES.md states that come from a looser classifier than Core's: 300025's "5 bare
   * multisig" are five OP_m <pushes> OP_n OP_CHECKMULTISIG scripts, but three push 33-byte "keys"
   * whose first byte is not 02/03, which Core's Solver (CPubKey::ValidSize) calls nonstandard.
   */
  loose?: Record<string, number>;
}

export const FIXTURE_BLOCKS: FixtureBlock[] = [
  {
    file: 'mainnet_h169482.raw',
    network: 'main',
    height: 169482,
    hashStart: '0000000000000756935f',
    hashEnd: '5f368665',
    txs: 14,
    bip34: false,
    segwit: false,
    outputTypes: { pubkeyhash: 228, pubkey: 1, nonstandard: 2 },
  },
  {
    file: 'mainnet_h227835.raw',
    network: 'main',
    height: 227835,
    hashStart: '00000000000001aa077d',
    hashEnd: 'b7a74eb6',
    txs: 122,
    bip34: false,
    segwit: false,
  },
  {
    file: 'mainnet_h227836.raw',
    network: 'main',
    height: 227836,
    hashStart: '00000000000000d0dfd4',
    hashEnd: 'a9b9adcc',
    txs: 100,
    bip34: true,
    segwit: false,
  },
  {
    file: 'mainnet_h300025.raw',
    network: 'main',
    height: 300025,
    hashStart: '0000000000000000821c',
    hashEnd: '9022cc78c',
    txs: 461,
    bip34: true,
    segwit: false,
    outputTypes: { multisig: 2 },
    loose: { multisig: 5 },
  },
  {
    file: 'mainnet_h367891.raw',
    network: 'main',
    height: 367891,
    hashStart: '000000000000000012ea',
    hashEnd: '92b29970',
    txs: 420,
    bip34: true,
    segwit: false,
  },
  {
    file: 'mainnet_h413567.raw',
    network: 'main',
    height: 413567,
    hashStart: '0000000000000000025a',
    hashEnd: '325d4069',
    txs: 1557,
    bip34: true,
    segwit: false,
    outputTypes: { pubkeyhash: 2841, scripthash: 737, nulldata: 3 },
  },
  {
    file: 'mainnet_h481829.raw',
    network: 'main',
    height: 481829,
    hashStart: '000000000000000000917c',
    hashEnd: 'b975e726',
    txs: 2020,
    bip34: true,
    segwit: true,
  },
  {
    file: 'mainnet_h482683.raw',
    network: 'main',
    height: 482683,
    hashStart: '000000000000000000c238',
    hashEnd: 'ee73e747',
    txs: 12,
    bip34: true,
    segwit: true,
  },
  {
    file: 'mainnet_h540107.raw',
    network: 'main',
    height: 540107,
    hashStart: '00000000000000000021868c',
    hashEnd: '806f94ab',
    txs: 230,
    bip34: true,
    segwit: true,
  },
  {
    file: 'mainnet_h574200.raw',
    network: 'main',
    height: 574200,
    hashStart: '0000000000000000001602407',
    hashEnd: 'f5de59d2',
    txs: 3315,
    bip34: true,
    segwit: true,
    outputTypes: { pubkeyhash: 4035, scripthash: 2601, nulldata: 976, witness_v0_keyhash: 442, witness_v0_scripthash: 58, pubkey: 38 },
  },
  {
    file: 'mainnet_h702861.raw',
    network: 'main',
    height: 702861,
    hashStart: '000000000000000000000c835b',
    hashEnd: '2c726dafae',
    txs: 2500,
    bip34: true,
    segwit: true,
    outputTypes: { witness_v0_scripthash: 133 },
  },
  {
    file: 'mainnet_h866342.raw',
    network: 'main',
    height: 866342,
    hashStart: '000000000000000000014ce9',
    hashEnd: 'd3c8f1f1',
    txs: 4864,
    bip34: true,
    segwit: true,
    outputTypes: {
      witness_v1_taproot: 2757,
      witness_v0_keyhash: 3113,
      nulldata: 3971,
      witness_v0_scripthash: 72,
      scripthash: 210,
      pubkeyhash: 204,
    },
  },
  {
    file: 'testnet3_h924634.raw',
    network: 'test',
    height: 924634,
    hashStart: '000000000000045e0b16',
    hashEnd: '04fa4497b',
    txs: 15,
    bip34: true,
    segwit: true,
  },
];

/** The raw bytes of a fixture block file (fails clearly if the fixtures are missing). */
export function readFixtureBlock(file: string): Uint8Array {
  return new Uint8Array(readFileSync(fixturePath('mainnet', 'blocks', file)));
}

/** Parses the mainnet/rpc JSON fixture `name`. */
export function readRpcFixture<T>(name: string): T {
  return JSON.parse(readFileSync(fixturePath('mainnet', 'rpc', name), 'utf8')) as T;
}
