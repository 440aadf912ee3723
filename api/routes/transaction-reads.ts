/**
 * /v1 reads of one transaction beyond its view: its serialized bytes (hex or binary: the index
 * keeps a mempool transaction's, a confirmed one's come from the node in one call) and the proof
 * that a block holds it: Esplora's `merkle-proof` ({block_height, merkle, pos}, the branch in
 * display hex, leaf to root) and Core's `gettxoutproof` bytes (header and partial Merkle tree),
 * both made from the index's header and txids of the block.
 * @module
 */
import { getMerkleData, findTxPlace } from '../queries/blocks.js';
import { decodeBlock } from '../../src/bitcoin/block.js';
import { hashToHex, hexToHash } from '../../src/bitcoin/hash.js';
import { merkleBranch, merkleLevels, partialMerkleTree } from '../../src/bitcoin/merkle.js';
import { ServiceError } from '../../src/errors.js';
import { hashParams } from '../schemas.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { RouteModule } from '../dialect.js';
import type { TransactionAnswer } from '../dialect.js';
import { heldTransactions, loadTransactionView } from '../transaction-view.js';
import { txViewSchema, withRawExtras } from '../transaction-extras.js';
import { setTipHeaders, tipHeaders } from '../tip.js';
import type { Tip } from '../queries/chain.js';

const textResponse = (description: string) =>
  ({ 200: { type: 'string', contentMediaType: 'text/plain', description, headers: tipHeaders } }) as const;

/** The serialized transaction, from the index (mempool) or the node (confirmed), and the tip its place in the index was read at. */
export async function rawTransaction(deps: ResolvedApiDeps, txidHex: string): Promise<{ bytes: Buffer; tip: Tip }> {
  const place = await findTxPlace(deps.readDb, Buffer.from(hexToHash(txidHex)));
  if (!place) throw new ServiceError('ERR_TX_NOT_FOUND');
  const tip = { height: place.tip_height, hash: place.tip_hash };
  if (place.raw) return { bytes: place.raw, tip };
  if (!deps.node?.getRawTransaction)
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no node is configured to read confirmed transactions from' });
  try {
    // (Core will not hand out the genesis coinbase as a transaction: it is the genesis block's)
    if (place.height === 0 && deps.node.getBlockRaw)
      return { bytes: Buffer.from(decodeBlock(await deps.node.getBlockRaw(hashToHex(place.block_hash))).txs[0]!.bytes), tip };
    return { bytes: Buffer.from(await deps.node.getRawTransaction(txidHex, hashToHex(place.block_hash))), tip };
  } catch (err) {
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
  }
}

/** Splits the packed txids of a block into leaves. */
function leaves(txids: Buffer): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let o = 0; o < txids.length; o += 32) out.push(txids.subarray(o, o + 32));
  return out;
}

/** The block of a confirmed transaction and its Merkle tree; undefined when the index has it in no block. */
async function findMerkleData(deps: ResolvedApiDeps, txidHex: string) {
  const data = await getMerkleData(deps.readDb, Buffer.from(hexToHash(txidHex)));
  return data && { ...data, levels: merkleLevels(leaves(data.txids)) };
}

async function merkleData(deps: ResolvedApiDeps, txidHex: string) {
  const data = await findMerkleData(deps, txidHex);
  if (!data)
    throw new ServiceError('ERR_TX_NOT_FOUND', {
      message: 'no confirmed transaction with this hash (a mempool transaction has no proof yet)',
    });
  return data;
}

/** Core's gettxoutproof bytes: the header and the partial Merkle tree of the one transaction. */
const txOutProof = (d: NonNullable<Awaited<ReturnType<typeof findMerkleData>>>) =>
  Buffer.concat([d.header, partialMerkleTree(d.levels, new Set([d.pos]))]);

/**
 * The whole inclusion proof of a confirmed transaction, as a stamp's answer carries it: the block
 * (hash, height, 80-byte header), the branch and position (Esplora's `merkle`, `pos`) and Core's
 * `gettxoutproof` bytes; undefined when the index has it in no block.
 */
export async function inclusionProof(deps: ResolvedApiDeps, txidHex: string) {
  const d = await findMerkleData(deps, txidHex);
  if (!d) return undefined;
  return {
    block_hash: hashToHex(d.block_hash),
    block_height: d.height,
    header: Buffer.from(d.header).toString('hex'),
    merkle: merkleBranch(d.levels, d.pos).map(hashToHex),
    pos: d.pos,
    txoutproof: txOutProof(d).toString('hex'),
  };
}

/** The schema of inclusionProof's answer. */
export const inclusionProofSchema = {
  type: 'object',
  required: ['block_hash', 'block_height', 'header', 'merkle', 'pos', 'txoutproof'],
  properties: {
    block_hash: { type: 'string', description: 'the block holding the transaction (display hex)' },
    block_height: { type: 'integer' },
    header: { type: 'string', description: 'its 80-byte header, hex: hashes to block_hash, holds the Merkle root' },
    merkle: {
      type: 'array',
      items: { type: 'string' },
      description: 'the sibling hashes from the transaction up to the root (display hex), as GET /transactions/{hash}/merkle-proof',
    },
    pos: { type: 'integer', description: "the transaction's position in the block" },
    txoutproof: {
      type: 'string',
      description: "Core's gettxoutproof bytes (header and partial Merkle tree), hex: `bitcoin-cli verifytxoutproof` takes them",
    },
  },
} as const;

/**
 * The answers built of confirmed views with their sizes (nothing more asked of the node), by view: a
 * held transaction's view is the same object while its rows are unchanged (api/cache/held-transactions.ts).
 */
const confirmedAnswers = new WeakMap<object, object>();

/** /v1's transaction: the spec's with fee, sizes and replaceability (GET /transactions/{hash}, routes/transactions.ts). */
export const v1TransactionAnswer: TransactionAnswer = {
  schema: txViewSchema,
  async load(deps, txid) {
    const r = await loadTransactionView(deps.readDb, deps.network, txid, deps.node, heldTransactions(deps));
    if (!r) return undefined;
    const kept = confirmedAnswers.get(r.view);
    if (kept) return { answer: kept, tip: r.tip };
    const block = r.view.block_hash[0];
    const source = r.mempoolRaw
      ? ({ kind: 'mempool', raw: r.mempoolRaw } as const)
      : ({ kind: 'confirmed', blockHash: block!.block_hash, height: block!.block_height } as const);
    // (what the node adds comes after the index's reads: a mempool entry's BIP125 flag; the sizes of a
    // view built without the node's transaction)
    const answer = (await withRawExtras(deps, [{ view: r.view, sizes: r.sizes }], source))[0]!;
    if (source.kind === 'confirmed' && r.sizes) confirmedAnswers.set(r.view, answer);
    return { answer, tip: r.tip };
  },
};

export const transactionReadRoutes: RouteModule = (app, deps) => {
  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash/hex',
    {
      schema: {
        summary: 'The serialized transaction, hex (text/plain)',
        tags: ['transactions'],
        params: hashParams,
        response: textResponse('hex, witness included'),
      },
    },
    async (request, reply) => {
      const r = await rawTransaction(deps, request.params.hash);
      setTipHeaders(reply, r.tip);
      return reply.type('text/plain; charset=utf-8').send(r.bytes.toString('hex'));
    },
  );

  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash/raw',
    {
      schema: {
        summary: 'The serialized transaction (application/octet-stream)',
        tags: ['transactions'],
        params: hashParams,
        response: {
          200: {
            type: 'string',
            format: 'binary',
            contentMediaType: 'application/octet-stream',
            description: "the transaction's bytes, witness included",
            headers: tipHeaders,
          },
        },
      },
    },
    async (request, reply) => {
      const r = await rawTransaction(deps, request.params.hash);
      setTipHeaders(reply, r.tip);
      return reply.type('application/octet-stream').send(r.bytes);
    },
  );

  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash/merkle-proof',
    {
      schema: {
        summary: 'Inclusion proof of a confirmed transaction (Esplora shape)',
        description: '`merkle`: the sibling hashes from the transaction up to the root (display hex); `pos`: its position in the block.',
        tags: ['transactions'],
        params: hashParams,
        response: {
          200: {
            type: 'object',
            required: ['block_height', 'merkle', 'pos'],
            properties: {
              block_height: { type: 'integer' },
              merkle: { type: 'array', items: { type: 'string' } },
              pos: { type: 'integer' },
            },
            headers: tipHeaders,
          },
        },
      },
    },
    async (request, reply) => {
      const d = await merkleData(deps, request.params.hash);
      setTipHeaders(reply, { height: d.tip_height, hash: d.tip_hash });
      return { block_height: d.height, merkle: merkleBranch(d.levels, d.pos).map(hashToHex), pos: d.pos };
    },
  );

  app.get<{ Params: { hash: string } }>(
    '/transactions/:hash/merkleblock-proof',
    {
      schema: {
        summary: "Core's gettxoutproof for the transaction: header and partial Merkle tree, hex (text/plain)",
        tags: ['transactions'],
        params: hashParams,
        response: textResponse('CMerkleBlock, hex'),
      },
    },
    async (request, reply) => {
      const d = await merkleData(deps, request.params.hash);
      setTipHeaders(reply, { height: d.tip_height, hash: d.tip_hash });
      return reply.type('text/plain; charset=utf-8').send(txOutProof(d).toString('hex'));
    },
  );
};
