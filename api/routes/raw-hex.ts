/**
 * Raw blocks and transactions as hex text (Coinstack's `?format=hex`): a mempool transaction's
 * bytes from the index, a block's and a confirmed transaction's from the node, which keeps them.
 * @module
 */
import type { FastifyReply } from 'fastify';
import { findBlockByHash } from '../queries/chain.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { ServiceError } from '../../src/errors.js';
import type { ResolvedApiDeps } from '../deps.js';
import { rawTransaction } from './transaction-reads.js';

function sendHex(reply: FastifyReply, bytes: Uint8Array): FastifyReply {
  return reply.type('text/plain').send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex'));
}

/** A main-chain block's bytes as hex text (404 when the index does not hold it). */
export async function sendBlockHex(deps: ResolvedApiDeps, hash: Buffer, reply: FastifyReply): Promise<FastifyReply> {
  const block = await findBlockByHash(deps.readDb, hash);
  if (!block) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
  if (!deps.node?.getBlockRaw) throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no node is configured to read blocks from' });
  try {
    return sendHex(reply, await deps.node.getBlockRaw(hashToHex(hash)));
  } catch (err) {
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
  }
}

/** A transaction's bytes as hex text. */
export async function sendTransactionHex(deps: ResolvedApiDeps, txid: Buffer, reply: FastifyReply): Promise<FastifyReply> {
  return sendHex(reply, (await rawTransaction(deps, hashToHex(txid))).bytes);
}
