/**
 * Esplora's address and script-hash routes (api/dialects/esplora.ts), the same for
 * `/address/:address` and `/scripthash/:hash` (SHA-256 of the output script, natural byte order):
 * statistics, `txs` (up to 50 mempool transactions, then the 25 newest confirmed), `txs/chain`
 * and `txs/chain/:last_seen_txid` (25 confirmed at a time, newest first, after the one named),
 * `txs/mempool` (up to 50) and `utxo`. An address is exactly its output script, as in electrs:
 * its reads are those of the script (src/db/queries/script-hash.ts, named by the script itself),
 * so a P2PKH address does not count the P2PK outputs of its key (/v1's address routes do).
 * Histories and unspent lists are read whole, up to SCRIPT_HISTORY_MAX entries (more: 400).
 * @module
 */
import { readStatsIn } from '../queries/address-stats.js';
import { findBlockHeader } from '../queries/blocks.js';
import { readHistoriesIn, readScriptUnspent, scriptRef, scriptRefOf, type ScriptRef } from '../../src/db/queries/script-hash.js';
import { hexToHash } from '../../src/bitcoin/hash.js';
import { ServiceError } from '../../src/errors.js';
import { parseAddressParam } from '../address-codec.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { DialectEdge, RouteModule } from '../dialect.js';
import { readAtTip } from '../tip.js';
import { esploraStats, esploraUtxo, type BlockRef } from '../dialects/esplora-shapes.js';
import { SCRIPT_HISTORY_MAX } from './address-reads.js';
import { assertNotSyncing } from './addresses.js';
import { esploraTxs } from './esplora-transactions.js';

/** Confirmed transactions per page (electrs's CHAIN_TXS_PER_PAGE). */
export const CHAIN_TXS_PER_PAGE = 25;
/** Most mempool transactions listed (electrs's MAX_MEMPOOL_TXS). */
const MAX_MEMPOOL_TXS = 50;

type Kind = 'address' | 'scripthash';

/** The script a path names, as electrs's `to_scripthash` reads it (its texts for what it refuses). */
function scriptOf(deps: ResolvedApiDeps, kind: Kind, raw: string): ScriptRef {
  if (kind === 'address') {
    const r = parseAddressParam(raw, deps.network);
    if ('problem' in r) throw new ServiceError(r.problem === 'wrong_network' ? 'ERR_WRONG_NETWORK' : 'ERR_INVALID_ADDRESS');
    // (an address's script is always one the index keeps)
    return scriptRefOf(r.script)!;
  }
  if (!/^([0-9a-fA-F]{2})*$/.test(raw)) throw new ServiceError('ERR_INVALID_HASH');
  if (raw.length !== 64) throw new ServiceError('ERR_INVALID_PARAMETER', { message: 'Invalid scripthash' });
  return scriptRef(Buffer.from(raw, 'hex'));
}

/** The script's history: mempool txids (by txid) and confirmed ones newest first. */
async function historyOf(deps: ResolvedApiDeps, ref: ScriptRef) {
  await assertNotSyncing(deps);
  const { value: h } = await readAtTip(deps.readDb, async (trx) => (await readHistoriesIn(trx, [ref], SCRIPT_HISTORY_MAX))[0]!);
  if (h.kind === 'too_long')
    throw new ServiceError('ERR_INVALID_PARAMETER', { message: `Too many history entries: more than ${SCRIPT_HISTORY_MAX}` });
  return {
    mempool: h.mempool.map((m) => m.txid).sort(Buffer.compare),
    confirmed: h.confirmed.map((c) => c.txid).reverse(),
  };
}

async function transactions(deps: ResolvedApiDeps, txids: readonly Buffer[]) {
  const txs = await esploraTxs(deps, txids);
  // (a transaction confirmed or dropped between the history's read and its own is left out)
  return txs.filter((t) => t !== undefined);
}

export const esploraScriptRoutes: RouteModule<DialectEdge> = (app, deps) => {
  for (const kind of ['address', 'scripthash'] as const) {
    type P = { Params: { x: string; last?: string } };

    app.get<P>(`/${kind}/:x`, async (request) => {
      const ref = scriptOf(deps, kind, request.params.x);
      await assertNotSyncing(deps);
      const { value } = await readAtTip(deps.readDb, (trx) => readStatsIn(trx, [ref]));
      const s = value.stats[0]!;
      return { [kind]: request.params.x, chain_stats: esploraStats(s.chain), mempool_stats: esploraStats(s.mempool) };
    });

    // `?after_txid=` is mempool.space's (its electrs, and mempool.js's getAddressTxs): what follows
    // that transaction in the list, the mempool part first, then 25 confirmed; [] when it is not in the list.
    app.get<P & { Querystring: { after_txid?: string } }>(`/${kind}/:x/txs`, async (request) => {
      const h = await historyOf(deps, scriptOf(deps, kind, request.params.x));
      let mempool = h.mempool.slice(0, MAX_MEMPOOL_TXS);
      let confirmed = h.confirmed;
      const after = request.query.after_txid;
      if (after !== undefined) {
        const txid = /^[0-9a-fA-F]{64}$/.test(after) ? hexToHash(after) : undefined;
        const inMempool = txid ? mempool.findIndex((t) => t.equals(txid)) : -1;
        const inChain = txid && inMempool < 0 ? confirmed.findIndex((t) => t.equals(txid)) : -1;
        if (inMempool < 0 && inChain < 0) return [];
        mempool = inMempool < 0 ? [] : mempool.slice(inMempool + 1);
        confirmed = confirmed.slice(inChain + 1);
      }
      return transactions(deps, [...mempool, ...confirmed.slice(0, CHAIN_TXS_PER_PAGE)]);
    });

    const chainPage = async (x: string, last: string | undefined) => {
      const h = await historyOf(deps, scriptOf(deps, kind, x));
      // (electrs: a last_seen_txid that is no txid counts as none; one not in the history ends the list)
      const lastTxid = last !== undefined && /^[0-9a-fA-F]{64}$/.test(last) ? hexToHash(last) : undefined;
      const from = lastTxid === undefined ? 0 : h.confirmed.findIndex((t) => t.equals(lastTxid)) + 1;
      return from === 0 && lastTxid !== undefined ? [] : transactions(deps, h.confirmed.slice(from, from + CHAIN_TXS_PER_PAGE));
    };
    app.get<P>(`/${kind}/:x/txs/chain`, async (request) => chainPage(request.params.x, undefined));
    app.get<P>(`/${kind}/:x/txs/chain/:last`, async (request) => chainPage(request.params.x, request.params.last));

    app.get<P>(`/${kind}/:x/txs/mempool`, async (request) => {
      const h = await historyOf(deps, scriptOf(deps, kind, request.params.x));
      return transactions(deps, h.mempool.slice(0, MAX_MEMPOOL_TXS));
    });

    app.get<P>(`/${kind}/:x/utxo`, async (request) => {
      const ref = scriptOf(deps, kind, request.params.x);
      await assertNotSyncing(deps);
      const { value } = await readAtTip(deps.readDb, async (trx) => {
        const unspent = await readScriptUnspent(trx, ref, SCRIPT_HISTORY_MAX);
        const heights = [...new Set(unspent.filter((u) => u.height > 0).map((u) => u.height))];
        const rows = await Promise.all(heights.map((height) => findBlockHeader(trx, { height })));
        const blocks = new Map<number, BlockRef>();
        for (const r of rows) if (r) blocks.set(r.height, { hash: r.hash, height: r.height, time: r.time });
        return { unspent, blocks };
      });
      if (value.unspent.length > SCRIPT_HISTORY_MAX)
        throw new ServiceError('ERR_INVALID_PARAMETER', { message: `Too many unspent outputs: more than ${SCRIPT_HISTORY_MAX}` });
      return value.unspent.map((u) => esploraUtxo(u, u.height > 0 ? value.blocks.get(u.height) : undefined));
    });
  }
};
