/**
 * Blockchain and mining RPCs with Core's answers and errors: getblockchaininfo,
 * getbestblockhash, getblockcount, getblockhash, getblockheader, getblock (0–3), getchaintips,
 * invalidateblock, reconsiderblock, generatetoaddress, generatetodescriptor, generateblock,
 * submitblock, getindexinfo.
 * @module
 */
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { bytesToHex, hashToHex, hexToBytes } from '../src/bitcoin/hash.js';
import { decodeTx, type DecodedTx } from '../src/bitcoin/tx.js';
import { regtestScript } from './address.js';
import { checkBlock, contextualCheckBlock } from './block-check.js';
import { BlockInvalid, type BlockEntry } from './chain.js';
import type { DevnodeContext } from './context.js';
import { descriptorChecksum } from './descriptor.js';
import { blockJson, chainInfoJson, headerJson } from './json-views.js';
import { assembleBlock } from './miner.js';
import { absent, argArray, argBool, argHash, argInt, argString, argVerbosity, arity } from './rpc-params.js';
import { RPC_ERR, RpcError, type RpcMethod } from './rpc-server.js';
import { verifyTxScripts } from './script-verify.js';

/** LookupBlockIndex, honouring blocks hidden by fault injection. */
export function lookupBlock(ctx: DevnodeContext, hash: string): BlockEntry | undefined {
  if (ctx.hidden.has(hash)) return undefined;
  return ctx.node.chain.get(hash);
}

function blockOrThrow(ctx: DevnodeContext, v: unknown, name = 'blockhash'): BlockEntry {
  const e = lookupBlock(ctx, argHash(v, name));
  if (!e) throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, 'Block not found');
  return e;
}

/** The output script of an address or a `raw()`/`addr()` descriptor (generatetodescriptor/generateblock). */
function outputScript(s: string, what: 'address' | 'descriptor' | 'either'): Uint8Array {
  if (what !== 'descriptor') {
    const script = regtestScript(s);
    if (script) return script;
    if (what === 'address') throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, 'Error: Invalid address');
  }
  const m = /^(raw|addr)\(([^)]*)\)(?:#([a-z0-9]{8}))?$/.exec(s);
  if (m && (!m[3] || descriptorChecksum(`${m[1]}(${m[2]})`) === m[3])) {
    if (m[1] === 'raw' && /^([0-9a-fA-F]{2})+$/.test(m[2]!)) return hexToBytes(m[2]!);
    const script = m[1] === 'addr' ? regtestScript(m[2]!) : null;
    if (script) return script;
  }
  throw new RpcError(
    RPC_ERR.INVALID_ADDRESS_OR_KEY,
    what === 'either' ? 'Error: Invalid address or descriptor' : 'Invalid descriptor (the devnode derives raw() and addr() only)',
  );
}

/** The blockchain and mining methods. */
export function chainMethods(ctx: DevnodeContext): Record<string, RpcMethod> {
  const { node } = ctx;
  return {
    getblockchaininfo: { args: [], run: ({ params }) => (arity('getblockchaininfo', params, 0, 0, ''), chainInfoJson(node)) },
    getbestblockhash: { args: [], run: ({ params }) => (arity('getbestblockhash', params, 0, 0, ''), node.chain.tip().hash) },
    getblockcount: { args: [], run: ({ params }) => (arity('getblockcount', params, 0, 0, ''), node.chain.height()) },
    getblockhash: {
      args: ['height'],
      run: ({ params }) => {
        arity('getblockhash', params, 1, 1, 'height');
        const h = argInt(params[0]);
        if (h < 0 || h > node.chain.height()) throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Block height out of range');
        return node.chain.active[h]!.hash;
      },
    },
    getblockheader: {
      args: ['blockhash', 'verbose'],
      run: ({ params }) => {
        arity('getblockheader', params, 1, 2, '"blockhash" ( verbose )');
        const verbose = absent(params[1]) ? true : argBool(params[1]);
        const e = blockOrThrow(ctx, params[0], 'hash');
        return verbose ? headerJson(node, e) : bytesToHex(e.block.bytes.subarray(0, 80));
      },
    },
    getblock: {
      args: ['blockhash', 'verbosity'],
      run: ({ params }) => {
        arity('getblock', params, 1, 2, '"blockhash" ( verbosity )');
        const e = blockOrThrow(ctx, params[0]);
        const v = argVerbosity(params[1], 1);
        if (v <= 0) return bytesToHex(e.block.bytes);
        return blockJson(node, e, v === 1 ? 1 : v === 2 ? 2 : 3);
      },
    },
    getchaintips: { args: [], run: () => node.chainTips() },
    invalidateblock: {
      args: ['blockhash'],
      run: ({ params }) => {
        arity('invalidateblock', params, 1, 1, '"blockhash"');
        ctx.invalidate(blockOrThrow(ctx, params[0]));
        return null;
      },
    },
    reconsiderblock: {
      args: ['blockhash'],
      run: ({ params }) => {
        arity('reconsiderblock', params, 1, 1, '"blockhash"');
        ctx.reconsider(blockOrThrow(ctx, params[0]));
        return null;
      },
    },
    generatetoaddress: {
      args: ['nblocks', 'address', 'maxtries'],
      run: ({ params }) => {
        arity('generatetoaddress', params, 2, 3, 'nblocks "address" ( maxtries )');
        const n = argInt(params[0]);
        return ctx.mine(n, outputScript(argString(params[1]), 'address'));
      },
    },
    generatetodescriptor: {
      args: ['num_blocks', 'descriptor', 'maxtries'],
      run: ({ params }) => {
        arity('generatetodescriptor', params, 2, 3, 'num_blocks "descriptor" ( maxtries )');
        return ctx.mine(argInt(params[0]), outputScript(argString(params[1]), 'descriptor'));
      },
    },
    generateblock: {
      args: ['output', 'transactions', 'submit'],
      run: ({ params }) => {
        arity('generateblock', params, 2, 3, '"output" ["rawtx/txid",...] ( submit )');
        const script = outputScript(argString(params[0]), 'either');
        const txs: DecodedTx[] = argArray(params[1]).map((item) => {
          const s = argString(item);
          if (/^[0-9a-fA-F]{64}$/.test(s)) {
            const e = node.mempool.get(s.toLowerCase());
            if (!e) throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, `Transaction ${s} not in mempool.`);
            return e.tx;
          }
          try {
            return decodeTx(hexToBytes(s));
          } catch {
            throw new RpcError(
              RPC_ERR.DESERIALIZATION_ERROR,
              `Transaction decode failed for ${s}. Make sure the tx has at least one input.`,
            );
          }
        });
        const submit = absent(params[2]) ? true : argBool(params[2]);
        const block = assembleBlock(node, { payoutScript: script, txs, useMempool: false });
        const test = testBlockValidity(ctx, block);
        if (test) throw new RpcError(RPC_ERR.VERIFY_ERROR, `TestBlockValidity failed: ${test}`);
        if (!submit) return { hash: hashToHex(block.hash), hex: bytesToHex(block.bytes) };
        const r = ctx.submitBlock(block);
        if (r.status !== 'accepted') throw new RpcError(RPC_ERR.MISC_ERROR, 'Failed to make block.');
        return { hash: r.entry.hash };
      },
    },
    submitblock: {
      args: ['hexdata', 'dummy'],
      run: ({ params }) => {
        arity('submitblock', params, 1, 2, '"hexdata" ( "dummy" )');
        let block;
        try {
          block = decodeBlock(hexToBytes(argString(params[0])));
        } catch {
          throw new RpcError(RPC_ERR.DESERIALIZATION_ERROR, 'Block decode failed');
        }
        if (block.txs.length === 0 || !block.txs[0]!.isCoinbase)
          throw new RpcError(RPC_ERR.DESERIALIZATION_ERROR, 'Block does not start with a coinbase');
        const r = ctx.submitBlock(block);
        switch (r.status) {
          case 'accepted':
            return null;
          case 'invalid':
            return r.reason || 'rejected';
          default:
            return r.status;
        }
      },
    },
    getindexinfo: {
      args: ['index_name'],
      run: ({ params }) => {
        const info = { txindex: { synced: true, best_block_height: node.chain.height() } };
        if (absent(params[0])) return info;
        return argString(params[0]) === 'txindex' ? info : {};
      },
    },
  };
}

/** TestBlockValidity: null when the block would connect on the tip, else Core's reason. */
function testBlockValidity(ctx: DevnodeContext, block: DecodedBlock): string | null {
  const { node } = ctx;
  try {
    checkBlock(block);
    contextualCheckBlock(block, node.chain.tip(), node.now());
    node.chain.testConnect(block, node.verifyScripts ? (tx, prevouts) => verifyTxScripts(tx, prevouts)?.error ?? null : null);
  } catch (err) {
    if (err instanceof BlockInvalid) return err.message;
    throw err;
  }
  return null;
}
