/**
 * An index belongs to the chain it followed. Pointed at another node — the quick start's data
 * directory switched from the stand-in to Bitcoin Core, two regtest chains that share only their
 * genesis — the indexer would take the new chain for a reorg and undo every block, silently, and
 * stamps would spend coins of the abandoned chain. Before the indexer starts, the block the index
 * holds at height 1 (at height 0 while the node has no block 1 yet: a node still syncing is not
 * another chain) is compared with the node's; a different block there is another chain, and the
 * start is refused, asking for a new data directory (or database).
 * @module
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { hashToHex } from '../../src/bitcoin/hash.js';

/** What is needed of the node: its block count and the hash of a block by height. */
export type ChainNode = { call<T>(method: string, params?: unknown[]): Promise<T> };

/** The error of an index that follows another chain than the node's. */
export class OtherChainError extends Error {
  readonly code = 'ERR_OTHER_CHAIN';
  constructor(message: string) {
    super(message);
    this.name = 'OtherChainError';
  }
}

/** Resolves when the index is empty or on the node's chain; rejects with OtherChainError otherwise. */
export async function assertIndexOnNodeChain(db: Kysely<Database>, node: ChainNode, where: string): Promise<void> {
  const indexed = await db.selectFrom('blocks').select(['height', 'hash']).where('height', 'in', [0, 1]).execute();
  if (indexed.length === 0) return;
  const nodeHeight = await node.call<number>('getblockcount', []);
  const height = nodeHeight >= 1 && indexed.some((b) => b.height === 1) ? 1 : 0;
  const ours = indexed.find((b) => b.height === height);
  if (!ours) return;
  const theirs = await node.call<string>('getblockhash', [height]);
  const mine = hashToHex(ours.hash);
  if (mine === theirs) return;
  throw new OtherChainError(
    `the index (${where}) follows another chain than this node's: its block ${height} is ${mine}, the node's is ${theirs}. ` +
      'Following this node would undo the whole index. Use a new data directory (BLOCKWIRE_DATA_DIR) or database (DATABASE_URL) for this node, or point it back at the node it indexed.',
  );
}
