/**
 * The API's view of chain changes (src/db/chain-changes.ts): a LISTEN connection of its own on
 * the chain channel (src/db/listen.ts) and its read barrier. The caches of this folder that hold
 * answers across requests are handed it (`ChainChanges`) and ask it whether an answer still holds.
 * `generation` moves on every chain notification and whenever the connection goes or comes back
 * (notifications may have been missed meanwhile).
 * @module
 */
import type pg from 'pg';
import { CHAIN_CHANNEL, type ChainChanges } from '../../src/db/chain-changes.js';
import { createReadBarrier, listenChannels } from '../../src/db/listen.js';
import type { Logger } from '../../src/log.js';

export type ChainChangesListener = ChainChanges & { close(): Promise<void> };

/** Starts listening; resolves once the first attempt connected or failed (it keeps retrying). */
export async function listenChainChanges(opts: { databaseUrl: string; log?: Logger }): Promise<ChainChangesListener> {
  let generation = 0;
  let client: pg.Client | undefined;
  const barrier = createReadBarrier();
  const listener = await listenChannels({
    databaseUrl: opts.databaseUrl,
    applicationName: 'blockwire-api-chain',
    channels: [CHAIN_CHANNEL],
    what: 'chain notifications',
    ...(opts.log ? { log: opts.log } : {}),
    onNotification: () => void generation++,
    onUp: (c) => {
      client = c;
      generation++;
    },
    onDown: () => {
      client = undefined;
      generation++;
    },
  });
  const changes: ChainChangesListener = {
    get generation() {
      return generation;
    },
    async settled() {
      const c = client;
      if (!listener.listening || !c) return false;
      try {
        await barrier(c);
      } catch {
        return false;
      }
      return listener.listening && client === c;
    },
    async unchangedSince(since) {
      return (await changes.settled()) && generation === since;
    },
    async close() {
      client = undefined;
      await listener.close();
    },
  };
  return changes;
}
