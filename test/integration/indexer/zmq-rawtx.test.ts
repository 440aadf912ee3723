/**
 * The notifier drops `rawtx` from its subscription once the node shows that it publishes
 * `sequence` on the same endpoint (Core sends a `rawtx` for every transaction of a connected
 * block right before announcing it), and takes it again after a restart of the node (a counter
 * back to 0) or a lost connection, until the next `sequence` message. A real ZeroMQ publisher on 127.0.0.1 (which
 * filters by topic on its side) sends the messages; what reaches the notifier is counted by its
 * wakes, and no counter gap is reported on the way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Publisher } from 'zeromq';
import { startNotifier, type Notifier, type NotifyHandlers } from '../../../indexer/notify.js';
import { freePort } from '../../../cli/embedded/free-port.js';
import { silentLogger } from '../../../src/log.js';
import { waitFor } from '../../support/wait.js';
import { le32 } from '../../../devnode/zmq.js';

describe('rawtx subscription follows the node publishing sequence', () => {
  let pub: Publisher;
  let url = '';
  let notifier: Notifier;
  const seen = { rawtx: 0, blocks: 0, hints: 0, gaps: [] as string[], resets: [] as string[] };
  /** Set by the handlers a block or sequence message calls before its wake; a wake without it is a rawtx's. */
  let named = false;
  let lastBlock = '';
  const handlers: NotifyHandlers = {
    wake: () => {
      if (!named) seen.rawtx++;
      named = false;
    },
    gap: (t, e, g) => void seen.gaps.push(`${t}:${e}->${g}`),
    reset: (t) => void seen.resets.push(t),
    sequence: () => {
      seen.hints++;
      named = true;
    },
    announced: (hash) => {
      seen.blocks++;
      lastBlock = hash;
      named = true;
    },
  };
  const next = new Map<string, number>();
  /** Publishes a message of `topic` with the topic's next counter (`from`: the counter restarts there). */
  const send = async (topic: 'rawtx' | 'hashblock' | 'sequence', from?: number) => {
    const n = from ?? next.get(topic) ?? 0;
    next.set(topic, n + 1);
    const body =
      topic === 'rawtx'
        ? Buffer.alloc(120, 7)
        : topic === 'hashblock'
          ? Buffer.alloc(32, 1)
          : Buffer.concat([Buffer.alloc(32, 2), Buffer.from('C')]);
    await pub.send([topic, body, le32(n)]);
  };
  /** How many of `count` rawtx messages sent now reached the notifier (counted once a hashblock sent after them arrived). */
  const rawtxReaching = async (count: number): Promise<number> => {
    const r0 = seen.rawtx;
    const b0 = seen.blocks;
    for (let i = 0; i < count; i++) await send('rawtx');
    // (one publisher's messages reach a subscriber in order: the hashblock comes last)
    await send('hashblock');
    await waitFor('the hashblock sent after them', () => seen.blocks > b0);
    return seen.rawtx - r0;
  };

  beforeAll(async () => {
    pub = new Publisher({ linger: 0 });
    url = `tcp://127.0.0.1:${await freePort()}`;
    await pub.bind(url);
    notifier = await startNotifier({ url, log: silentLogger(), handlers });
    // The subscription reaches the publisher some time after connect (ZeroMQ's slow joiner).
    await waitFor('the subscription', async () => {
      await send('hashblock');
      return seen.blocks > 0;
    });
    // A hashblock sent while subscribing may still be on its way: one with a body of its own,
    // sent after them, arrives last (one publisher's order), so once it is seen none is left.
    await pub.send(['hashblock', Buffer.alloc(32, 9), le32(next.get('hashblock')!)]);
    next.set('hashblock', next.get('hashblock')! + 1);
    await waitFor('the hashblocks sent while subscribing', () => lastBlock === '09'.repeat(32));
  });
  afterAll(async () => {
    await notifier?.stop();
    pub?.close();
  });

  it('takes rawtx until a sequence message, then only sequence and hashblock', async () => {
    expect(await rawtxReaching(5)).toBe(5);
    await send('sequence');
    await waitFor('the sequence message', () => seen.hints === 1);
    // The unsubscription travels to the publisher: a rawtx sent meanwhile may still arrive.
    await waitFor('rawtx filtered at the publisher', async () => (await rawtxReaching(1)) === 0);
    expect(await rawtxReaching(50)).toBe(0);
    expect(seen.gaps).toEqual([]);
  });

  it('takes rawtx again after the node restarted, without a false gap, until the next sequence', async () => {
    // A restart: the node's counters start again at 0.
    await send('hashblock', 0);
    await waitFor('the reset', () => seen.resets.includes('hashblock'));
    await waitFor('rawtx reaching the notifier again', async () => (await rawtxReaching(1)) === 1);
    expect(await rawtxReaching(20)).toBe(20);
    await send('sequence');
    await waitFor('the second sequence message', () => seen.hints === 2);
    await waitFor('rawtx filtered again', async () => (await rawtxReaching(1)) === 0);
    expect(await rawtxReaching(20)).toBe(0);
    expect(seen.gaps).toEqual([]);
  });

  it('takes rawtx again after the connection to the node was lost, though no other topic shows a restart', async () => {
    await send('sequence');
    await waitFor('the third sequence message', () => seen.hints === 3);
    await waitFor('rawtx filtered', async () => (await rawtxReaching(1)) === 0);
    // The node goes away; another comes back on the same endpoint publishing rawtx alone.
    pub.close();
    await waitFor('the endpoint rebound', async () => {
      const p = new Publisher({ linger: 0 });
      try {
        await p.bind(url);
        pub = p;
        return true;
      } catch {
        p.close();
        return false;
      }
    });
    next.clear();
    const resets = seen.resets.length;
    // Each poll publishes one more rawtx: one reaches the notifier once it has subscribed again.
    await waitFor('rawtx reaching the notifier from the new node', async () => {
      const r0 = seen.rawtx;
      await send('rawtx');
      await new Promise((r) => setTimeout(r, 50));
      return seen.rawtx > r0;
    });
    // (the rawtx counter starts afresh with the new subscription: neither a gap nor a reset)
    expect(seen.gaps).toEqual([]);
    expect(seen.resets.slice(resets)).toEqual([]);
  });
});
