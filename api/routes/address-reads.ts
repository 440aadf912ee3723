/**
 * /v1 reads of addresses and scripts beyond the spec's three: an address's statistics (Esplora's
 * `chain_stats` / `mempool_stats`), reads by script hash (the SHA-256 of an output script, in its
 * natural byte order as Esplora takes it: P2PK and bare multisig outputs, which no address names,
 * can be asked for by their script) and a batch of up to 1,000 addresses in one POST. Each answer
 * is read from the index in one snapshot, whose tip it carries in the tip headers (api/tip.ts).
 * @module
 */
import { createHash } from 'node:crypto';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { readStatsIn, readUnspentMany, type StatsTarget, type TargetStats } from '../queries/address-stats.js';
import { getBalancePartsMany } from '../queries/address.js';
import {
  readHistoriesIn,
  readScriptBalance,
  readScriptUnspent,
  scriptRef,
  scriptRefOf,
  type ScriptRef,
} from '../../src/db/queries/script-hash.js';
import { txNumHeight } from '../../src/db/tx-num.js';
import { ServiceError } from '../../src/errors.js';
import type { RouteModule } from '../dialect.js';
import { addressParams, unspentSchema } from '../schemas.js';
import { readAtTip, setTipHeaders, tipHeaders } from '../tip.js';
import { assertNotSyncing, resolveAddress } from './addresses.js';

/** Most addresses one batch may name. */
const BATCH_MAX = 1000;
/** Most unspent outputs a batch lists per address (more: `unspentoutputs_more`, page them with GET /addresses/{a}/unspentoutputs). */
const BATCH_UNSPENT_MAX = 1000;
/** Most transactions a script hash's history is answered with (one answer, unpaged). */
export const SCRIPT_HISTORY_MAX = 10_000;

const txoStats = {
  type: 'object',
  required: ['funded_txo_count', 'funded_txo_sum', 'spent_txo_count', 'spent_txo_sum', 'tx_count'],
  properties: {
    funded_txo_count: { type: 'integer', description: 'outputs paying it' },
    funded_txo_sum: { type: 'integer', description: 'their sum, sat' },
    spent_txo_count: { type: 'integer', description: 'of its outputs, those spent' },
    spent_txo_sum: { type: 'integer', description: 'their sum, sat' },
    tx_count: { type: 'integer', description: 'transactions funding or spending it' },
  },
} as const;

const statsProperties = {
  chain_stats: { ...txoStats, description: 'confirmed: outputs created in blocks, spends made in blocks' },
  mempool_stats: {
    ...txoStats,
    description: 'the mempool: outputs its transactions create, and its spends of any output (confirmed or not)',
  },
} as const;

const statsDescription =
  "Esplora's shape. Chain: spent = funded − still unspent, so funded_txo_sum − spent_txo_sum is the confirmed balance. An address counts the outputs of its balance (a P2PKH address also its key's P2PK outputs; a bare multisig output counts for nobody, its transaction is in tx_count as in the history); a script hash counts exactly its script, P2PK and bare multisig included.";

const scriptParams = {
  type: 'object',
  required: ['hash'],
  properties: {
    hash: {
      type: 'string',
      pattern: '^[0-9a-fA-F]{64}$',
      description:
        "SHA-256 of the output script, 64 hex characters in its natural byte order (Esplora's; Electrum's script hash is the same bytes reversed)",
    },
  },
} as const;

const scriptQuery = {
  type: 'object',
  properties: {
    script: {
      type: 'string',
      minLength: 2,
      maxLength: 20000,
      pattern: '^([0-9a-fA-F]{2})+$',
      description:
        "the output script itself, hex (optional; its SHA-256 must be the hash): names where a P2PK or bare multisig script's outputs are kept without the alias the index records for it (P2PK outputs spent before the aliases existed are found only so)",
    },
  },
} as const;

type ScriptRequest = { Params: { hash: string }; Querystring: { script?: string } };

const statsView = (s: TargetStats) => ({ chain_stats: s.chain, mempool_stats: s.mempool });

export const addressReadRoutes: RouteModule = (app, deps, dialect) => {
  const shapeUnspent = dialect.shapes.unspent;
  const confirmations = (tip: number, txNum: bigint | null) => (txNum === null ? 0 : Math.max(1, tip - txNumHeight(txNum) + 1));

  app.get<{ Params: { address: string } }>(
    '/addresses/:address/stats',
    {
      schema: {
        summary: 'Statistics of an address: outputs funded and spent (count, sum) and transactions, confirmed and in the mempool',
        description: statsDescription,
        tags: ['addresses'],
        params: addressParams,
        response: {
          200: {
            type: 'object',
            required: ['address', 'chain_stats', 'mempool_stats'],
            properties: { address: { type: 'string' }, ...statsProperties },
            headers: tipHeaders,
          },
        },
      },
    },
    async (request, reply) => {
      const key = resolveAddress(deps, request.params.address);
      await assertNotSyncing(deps);
      const r = await readAtTip(deps.readDb, (trx) => readStatsIn(trx, [{ key }]));
      setTipHeaders(reply, r.tip);
      return { address: request.params.address, ...statsView(r.value.stats[0]!) };
    },
  );

  // ---- by script hash
  // The index keys outputs by their address's script (src/db/address-key.ts): a script hash
  // names the key of every script that is its own address (P2PKH, P2SH, segwit); a P2PK or bare
  // multisig output lies under a P2PKH key, found through the script's alias (script_aliases).
  // The script itself in `script` (checked against the hash) names that key without the alias.
  const refOf = (hash: string, scriptHex: string | undefined): ScriptRef => {
    const sha = Buffer.from(hash, 'hex');
    if (scriptHex === undefined) return scriptRef(sha);
    const script = Buffer.from(scriptHex, 'hex');
    if (!createHash('sha256').update(script).digest().equals(sha))
      throw new ServiceError('ERR_INVALID_PARAMETER', { message: 'script: its SHA-256 is not the hash in the path' });
    const ref = scriptRefOf(script);
    if (ref === null)
      throw new ServiceError('ERR_INVALID_PARAMETER', { message: 'script: OP_RETURN and nonstandard outputs are not indexed' });
    return ref;
  };

  app.get<ScriptRequest>(
    '/scripthash/:hash/stats',
    {
      schema: {
        summary: 'Statistics of one output script, as /addresses/{address}/stats',
        description: statsDescription,
        tags: ['scripthash'],
        params: scriptParams,
        querystring: scriptQuery,
        response: {
          200: {
            type: 'object',
            required: ['scripthash', 'chain_stats', 'mempool_stats'],
            properties: { scripthash: { type: 'string' }, ...statsProperties },
            headers: tipHeaders,
          },
        },
      },
    },
    async (request, reply) => {
      const ref = refOf(request.params.hash, request.query.script);
      await assertNotSyncing(deps);
      const r = await readAtTip(deps.readDb, (trx) => readStatsIn(trx, [ref]));
      setTipHeaders(reply, r.tip);
      return { scripthash: request.params.hash.toLowerCase(), ...statsView(r.value.stats[0]!) };
    },
  );

  app.get<ScriptRequest>(
    '/scripthash/:hash/balance',
    {
      schema: {
        summary: 'Balance of one output script: its unspent outputs, mempool included',
        description:
          '`confirmed`: outputs of the script no block spends; `unconfirmed`: what mempool transactions pay to it minus what they spend from it; `balance` their sum.',
        tags: ['scripthash'],
        params: scriptParams,
        querystring: scriptQuery,
        response: {
          200: {
            type: 'object',
            required: ['balance', 'confirmed', 'unconfirmed'],
            properties: { balance: { type: 'integer' }, confirmed: { type: 'integer' }, unconfirmed: { type: 'integer' } },
            headers: tipHeaders,
          },
        },
      },
    },
    async (request, reply) => {
      const ref = refOf(request.params.hash, request.query.script);
      await assertNotSyncing(deps);
      const { value: b, tip } = await readAtTip(deps.readDb, (trx) => readScriptBalance(trx, ref));
      setTipHeaders(reply, tip);
      return { balance: Number(b.confirmed + b.unconfirmed), confirmed: Number(b.confirmed), unconfirmed: Number(b.unconfirmed) };
    },
  );

  app.get<ScriptRequest>(
    '/scripthash/:hash/history',
    {
      schema: {
        summary: 'Transactions funding or spending one output script: mempool first (by txid), then the chain newest first',
        description: `One answer, unpaged: a script with more than ${SCRIPT_HISTORY_MAX} transactions is refused (ERR_INVALID_PARAMETER); an address's history pages.`,
        tags: ['scripthash'],
        params: scriptParams,
        querystring: scriptQuery,
        response: { 200: { type: 'array', items: { type: 'string' }, headers: tipHeaders } },
      },
    },
    async (request, reply) => {
      const ref = refOf(request.params.hash, request.query.script);
      await assertNotSyncing(deps);
      const r = await readAtTip(deps.readDb, async (trx) => ({ h: (await readHistoriesIn(trx, [ref], SCRIPT_HISTORY_MAX))[0]! }));
      const { h } = r.value;
      if (h.kind === 'too_long')
        throw new ServiceError('ERR_INVALID_PARAMETER', {
          message: `the script's history holds more than ${SCRIPT_HISTORY_MAX} transactions`,
          errorCause: String(h.count),
        });
      setTipHeaders(reply, r.tip);
      const mempool = h.mempool.map((m) => hashToHex(m.txid)).sort();
      return [...mempool, ...h.confirmed.map((c) => hashToHex(c.txid)).reverse()];
    },
  );

  app.get<ScriptRequest>(
    '/scripthash/:hash/unspentoutputs',
    {
      schema: {
        summary:
          'Unspent outputs of one output script (mempool outputs with 0 confirmations first, outputs spent by the mempool left out), newest first',
        description: `One answer, unpaged: a script with more than ${SCRIPT_HISTORY_MAX} unspent outputs is refused (ERR_INVALID_PARAMETER).`,
        tags: ['scripthash'],
        params: scriptParams,
        querystring: scriptQuery,
        response: { 200: { ...unspentSchema, headers: tipHeaders } },
      },
    },
    async (request, reply) => {
      const ref = refOf(request.params.hash, request.query.script);
      await assertNotSyncing(deps);
      const { value: unspent, tip } = await readAtTip(deps.readDb, (trx) => readScriptUnspent(trx, ref, SCRIPT_HISTORY_MAX));
      if (unspent.length > SCRIPT_HISTORY_MAX)
        throw new ServiceError('ERR_INVALID_PARAMETER', { message: `the script has more than ${SCRIPT_HISTORY_MAX} unspent outputs` });
      setTipHeaders(reply, tip);
      // (readScriptUnspent: confirmed in chain order, then mempool; answered newest first, mempool first)
      const mempool = unspent.filter((u) => u.height === 0);
      const chain = unspent.filter((u) => u.height !== 0).reverse();
      return [...mempool, ...chain].map((u) =>
        shapeUnspent({
          txid: u.txid,
          vout: u.vout,
          value: u.value,
          script: u.script,
          confirmations: u.height === 0 ? 0 : Math.max(1, tip.height - u.height + 1),
        }),
      );
    },
  );

  // ---- many addresses at once
  type BatchBody = { addresses: string[]; include?: ('balance' | 'unspentoutputs' | 'stats')[] };
  app.post<{ Body: BatchBody }>(
    '/addresses/batch',
    {
      schema: {
        summary: `Balances, unspent outputs and statistics of up to ${BATCH_MAX} addresses in one request`,
        description: `One snapshot for the whole batch (its tip in the tip headers): one statement for the balances, one for the unspent outputs, the statistics as /addresses/{address}/stats. Answers in the order of \`addresses\`. \`balance\` as GET /addresses/{a}/balance (mempool included); \`unspentoutputs\` as GET /addresses/{a}/unspentoutputs, at most ${BATCH_UNSPENT_MAX} per address (\`unspentoutputs_more\` true when there are more: page them there). An invalid address fails the whole batch (ERR_INVALID_ADDRESS / ERR_WRONG_NETWORK, \`error_cause\` its index).`,
        tags: ['addresses'],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['addresses'],
          properties: {
            addresses: { type: 'array', minItems: 1, maxItems: BATCH_MAX, items: { type: 'string', minLength: 1, maxLength: 120 } },
            include: {
              type: 'array',
              minItems: 1,
              uniqueItems: true,
              items: { type: 'string', enum: ['balance', 'unspentoutputs', 'stats'] },
              default: ['balance'],
            },
          },
        },
        response: {
          200: {
            type: 'array',
            headers: tipHeaders,
            items: {
              type: 'object',
              required: ['address'],
              properties: {
                address: { type: 'string' },
                balance: { type: 'integer', description: 'sat, mempool included' },
                unspentoutputs: unspentSchema,
                unspentoutputs_more: { type: 'boolean' },
                stats: { type: 'object', required: ['chain_stats', 'mempool_stats'], properties: statsProperties },
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const { addresses } = request.body;
      const include = new Set(request.body.include ?? ['balance']);
      const keys = addresses.map((a, i) => {
        try {
          return resolveAddress(deps, a);
        } catch (err) {
          if (err instanceof ServiceError)
            throw new ServiceError(err.code, { message: `addresses[${i}]: ${err.message}`, errorCause: String(i) });
          throw err;
        }
      });
      await assertNotSyncing(deps);
      const { value: r, tip } = await readAtTip(deps.readDb, async (trx) => {
        const balances = include.has('balance') ? await getBalancePartsMany(trx, keys) : undefined;
        const unspent = include.has('unspentoutputs') ? await readUnspentMany(trx, keys, BATCH_UNSPENT_MAX) : undefined;
        const stats = include.has('stats')
          ? (
              await readStatsIn(
                trx,
                keys.map((key): StatsTarget => ({ key })),
              )
            ).stats
          : undefined;
        return { balances, unspent, stats };
      });
      setTipHeaders(reply, tip);
      return addresses.map((address, i) => {
        const out: Record<string, unknown> = { address };
        if (r.balances) out.balance = Number(r.balances[i]!.confirmed + r.balances[i]!.mempool);
        if (r.unspent) {
          const list = r.unspent[i]!;
          out.unspentoutputs = list.slice(0, BATCH_UNSPENT_MAX).map((u) =>
            shapeUnspent({
              txid: u.txid,
              vout: u.vout,
              value: u.value,
              script: u.script,
              confirmations: confirmations(tip.height, u.txNum),
            }),
          );
          out.unspentoutputs_more = list.length > BATCH_UNSPENT_MAX;
        }
        if (r.stats) out.stats = statsView(r.stats[i]!);
        return out;
      });
    },
  );
};
