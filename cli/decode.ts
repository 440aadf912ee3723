/**
 * `blockwire decode FILE|HEX|- [--network NAME]`: decodes a raw block or transaction (bytes or
 * hex, from a file, the argument or stdin; blk*.dat framing too) and prints it as JSON. Blocks:
 * hash, prev_hash, merkle_root, time (ISO 8601 UTC), height (BIP34, or null), transactions.
 * Transactions: txid, wtxid, coinbase, inputs (txid, vout), outputs (index, value in sat as a
 * decimal string, script hex, type, address list, data hex for OP_RETURN).
 * @module
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { outputAddresses } from '../src/bitcoin/address.js';
import { parseBlkRecords } from '../src/bitcoin/blk.js';
import { type DecodedBlock, decodeBlock } from '../src/bitcoin/block.js';
import { bytesToHex, equalBytes, hashToHex, hexToBytes } from '../src/bitcoin/hash.js';
import { getNetwork, type Network, NETWORK_NAMES, NETWORKS } from '../src/bitcoin/network.js';
import { classifyScript, nullData } from '../src/bitcoin/script.js';
import { type DecodedTx, decodeTx } from '../src/bitcoin/tx.js';

const USAGE = `usage: blockwire decode FILE|HEX|- [--network main|test|testnet4|signet|regtest]

Decodes a raw block or transaction and prints it as JSON. The input is a file (raw bytes or hex
text), a hex string, or - for stdin. A file in blk*.dat framing prints a JSON array of its blocks.
Addresses are encoded for --network (default: main; for blk framing, the network of its magic).
`;

/** JSON view of a transaction input. */
export interface InputJson {
  txid: string;
  vout: number;
}

/** JSON view of a transaction output. */
export interface OutputJson {
  index: number;
  value: string;
  script: string;
  type: string;
  address: string[];
  data?: string;
}

/** JSON view of a transaction. */
export interface TxJson {
  txid: string;
  wtxid: string;
  coinbase: boolean;
  inputs: InputJson[];
  outputs: OutputJson[];
}

/** JSON view of a block. */
export interface BlockJson {
  hash: string;
  prev_hash: string;
  merkle_root: string;
  time: string;
  height: number | null;
  transactions: TxJson[];
}

/** The JSON view of a decoded transaction, addresses encoded for `network`. */
export function txJson(tx: DecodedTx, network: Network): TxJson {
  return {
    txid: hashToHex(tx.txid),
    wtxid: hashToHex(tx.wtxid),
    coinbase: tx.isCoinbase,
    inputs: tx.inputs.map((i) => ({ txid: hashToHex(i.prevTxid), vout: i.vout })),
    outputs: tx.outputs.map((o, index) => {
      const type = classifyScript(o.script);
      const out: OutputJson = {
        index,
        value: o.value.toString(),
        script: bytesToHex(o.script),
        type,
        address: outputAddresses(o.script, network),
      };
      if (type === 'nulldata') out.data = bytesToHex(nullData(o.script)!);
      return out;
    }),
  };
}

/** Unix seconds as ISO 8601 UTC without milliseconds (`2009-01-03T18:15:05Z`). */
function isoTime(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

/** The JSON view of a decoded block, addresses encoded for `network`. */
export function blockJson(block: DecodedBlock, network: Network): BlockJson {
  return {
    hash: hashToHex(block.hash),
    prev_hash: hashToHex(block.header.prevHash),
    merkle_root: hashToHex(block.header.merkleRoot),
    time: isoTime(block.header.time),
    height: block.height,
    transactions: block.txs.map((tx) => txJson(tx, network)),
  };
}

const HEX_TEXT = /^[0-9a-fA-F\s]+$/;

function fromHexText(text: string): Uint8Array {
  return hexToBytes(text.replace(/\s+/g, ''));
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** The bytes named by the argument: a file (raw or hex text), stdin (`-`), or hex itself. */
async function loadInput(arg: string): Promise<Uint8Array> {
  let raw: Buffer | undefined;
  if (arg === '-') raw = await readStdin();
  else {
    try {
      raw = await readFile(arg);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENAMETOOLONG') throw new Error(`cannot read ${arg}: ${(e as Error).message}`);
    }
  }
  if (raw === undefined) {
    if (!HEX_TEXT.test(arg)) throw new Error(`'${arg.length > 80 ? arg.slice(0, 77) + '...' : arg}' is neither a file nor hex`);
    return fromHexText(arg);
  }
  if (raw.length === 0) throw new Error('input is empty');
  const text = raw.toString('latin1');
  return HEX_TEXT.test(text) ? fromHexText(text) : new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
}

/** Decodes the bytes as blk framing, a block or a transaction, whichever fits. */
export function decodeInput(bytes: Uint8Array, network: Network | undefined): BlockJson | TxJson | BlockJson[] {
  const framed = Object.values(NETWORKS).find((n) => bytes.length >= 8 && equalBytes(bytes.subarray(0, 4), n.magic));
  if (framed) {
    const net = network ?? framed;
    return parseBlkRecords(bytes, 0, net, true).records.map((r) => blockJson(decodeBlock(r.block), net));
  }
  const net = network ?? NETWORKS.main;
  let blockError: Error;
  try {
    return blockJson(decodeBlock(bytes), net);
  } catch (e) {
    blockError = e as Error;
  }
  try {
    return txJson(decodeTx(bytes), net);
  } catch (e) {
    throw new Error(`not a block (${blockError.message}) nor a transaction (${(e as Error).message})`);
  }
}

/** Entry point of `blockwire decode`. */
export async function run(argv: string[]): Promise<number> {
  // `blockwire decode … | head` closes the pipe early: that is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
  });
  let args: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: { network: { type: 'string', short: 'n' }, help: { type: 'boolean', short: 'h' } },
    });
  }
  try {
    args = parse();
  } catch (e) {
    process.stderr.write(`blockwire decode: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.positionals.length !== 1) {
    process.stderr.write(`blockwire decode: expected one FILE, HEX or -, got ${args.positionals.length}\n\n${USAGE}`);
    return 2;
  }
  const name = args.values.network;
  if (name !== undefined && !(NETWORK_NAMES as readonly string[]).includes(name)) {
    process.stderr.write(`blockwire decode: unknown network '${name}' (expected main, test, testnet4, signet or regtest)\n`);
    return 2;
  }
  try {
    const bytes = await loadInput(args.positionals[0]!);
    const result = decodeInput(bytes, name === undefined ? undefined : getNetwork(name));
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return 0;
  } catch (e) {
    process.stderr.write(`blockwire decode: ${(e as Error).message}\n`);
    return 1;
  }
}
