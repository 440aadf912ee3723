/**
 * Outbox rows → events → deliveries: decoding (display byte order, amounts, contract breaks)
 * and the matching rules of docs/events.md; the relay → hub feed message built from them.
 */
import { describe, expect, it } from 'vitest';
import { decodeOutboxRow, decodeOutboxRows, toPayload, type OutboxRow } from '../../../streams/events.js';
import { buildWalletParts } from '../../../src/db/wallet-event.js';
import {
  addressKeysOf,
  walletIdsOf,
  deliveryId,
  deliveryJson,
  deliveryParts,
  indexSubscriptions,
  matchEvent,
  matchEvents,
  partsJson,
  type SubscriptionRef,
} from '../../../streams/match.js';
import { decodeFeedBatch, encodeFeedBatch, type FeedItem } from '../../../streams/feed-message.js';

const TXID = Buffer.alloc(32, 0);
TXID[0] = 0xaa; // internal order: display hex ends with "aa"
const BLOCK = Buffer.alloc(32, 0);
BLOCK[31] = 0x01; // display hex starts with "01"
const A = '11111111-1111-1111-1111-111111111111';
const B = '22222222-2222-2222-2222-222222222222';

function row(over: Partial<OutboxRow>): OutboxRow {
  return {
    seq: 10n,
    created_at: new Date('2026-01-02T03:04:05.678Z'),
    type: 'tx.confirmed',
    key_id: null,
    addr_key: A,
    address: 'bcrt1qaddressa',
    txid: TXID,
    block_hash: BLOCK,
    height: 7,
    confirmations: 1,
    received: 5000n,
    sent: 0n,
    replaced_by: null,
    data: null,
    ...over,
  };
}

function sub(over: Partial<SubscriptionRef>): SubscriptionRef {
  return {
    id: 'sub_a',
    keyId: 1n,
    kind: 'address',
    addrKey: A,
    walletId: null,
    hookId: null,
    hookType: null,
    hookActive: false,
    confirmations: 6,
    startSeq: 0n,
    ...over,
  };
}

describe('decodeOutboxRow', () => {
  it('turns hashes to display order and keeps amounts exact', () => {
    const e = decodeOutboxRow(row({}));
    expect(e.type).toBe('tx.confirmed');
    if (e.type !== 'tx.confirmed') throw new Error('unreachable');
    expect(e.txid).toBe(`${'00'.repeat(31)}aa`);
    expect(e.block).toEqual({ hash: `01${'00'.repeat(31)}`, height: 7 });
    expect(e.received).toBe(5000n);
  });

  it('builds the version 1 payload with every field', () => {
    const e = decodeOutboxRow(row({ type: 'tx.replaced', replaced_by: BLOCK, block_hash: null, height: null, confirmations: 0 }));
    expect(toPayload(e, { id: 'sub_a', hookId: 'hook_x' })).toEqual({
      id: 10,
      type: 'tx.replaced',
      created_at: '2026-01-02T03:04:05Z',
      subscription_id: 'sub_a',
      action: 'hook_x',
      address: 'bcrt1qaddressa',
      transaction_hash: `${'00'.repeat(31)}aa`,
      block: null,
      confirmations: 0,
      received: 5000,
      sent: 0,
      replaced_by: `01${'00'.repeat(31)}`,
    });
  });

  it('gives block events no address or amounts', () => {
    const e = decodeOutboxRow(
      row({ type: 'block.connected', addr_key: null, address: null, txid: null, confirmations: null, received: null, sent: null }),
    );
    expect(toPayload(e, { id: 'sub_c', hookId: null })).toMatchObject({
      type: 'block.connected',
      address: null,
      transaction_hash: null,
      received: null,
      block: { height: 7 },
    });
  });

  it('names the row and the missing field when a row breaks the contract', () => {
    expect(() => decodeOutboxRow(row({ address: null }))).toThrow('outbox row 10 (tx.confirmed) has no address');
    expect(() => decodeOutboxRow(row({ type: 'block.connected', block_hash: null }))).toThrow(
      'outbox row 10 (block.connected) has no block',
    );
    expect(() => decodeOutboxRow(row({ type: 'nope' as never }))).toThrow("outbox row 10 has unknown type 'nope'");
    const bad: string[] = [];
    const ok = decodeOutboxRows([row({ seq: 1n }), row({ seq: 2n, txid: null }), row({ seq: 3n })], (r) => bad.push(r.seq.toString()));
    expect(ok.map((e) => e.seq)).toEqual([1n, 3n]);
    expect(bad).toEqual(['2']);
  });

  it('passes over the mempool’s own events (mempool.added / mempool.removed): no subscription gets them, and they are not errors', () => {
    const bad: string[] = [];
    const mempoolRow = (seq: bigint, type: 'mempool.added' | 'mempool.removed') =>
      row({
        seq,
        type,
        addr_key: null,
        address: null,
        block_hash: null,
        height: null,
        confirmations: null,
        received: null,
        sent: null,
        data: { keys: [A] },
      });
    const ok = decodeOutboxRows([mempoolRow(1n, 'mempool.added'), row({ seq: 2n }), mempoolRow(3n, 'mempool.removed')], (r) =>
      bad.push(r.seq.toString()),
    );
    expect(ok.map((e) => [e.seq, e.type])).toEqual([[2n, 'tx.confirmed']]);
    expect(bad).toEqual([]);
  });
});

describe('matchEvent', () => {
  const index = indexSubscriptions([
    sub({ id: 'sub_b', keyId: 2n, confirmations: 3, hookId: 'hook_2', hookType: 'http', hookActive: true }),
    sub({ id: 'sub_a', keyId: 1n }),
    sub({ id: 'sub_other', keyId: 1n, addrKey: B }),
    sub({ id: 'sub_chain', keyId: 3n, kind: 'chain', addrKey: null }),
    sub({ id: 'sub_late', keyId: 4n, startSeq: 10n }),
  ]);

  it('sends an address event to every subscription of that address, in id order', () => {
    const d = matchEvent(decodeOutboxRow(row({})), index);
    expect(d.map((x) => x.subscription?.id)).toEqual(['sub_a', 'sub_b']);
    expect(d.map((x) => x.keyId)).toEqual([1n, 2n]);
  });

  it("stops tx.confirmations at each subscription's target", () => {
    const at = (n: number) =>
      matchEvent(decodeOutboxRow(row({ type: 'tx.confirmations', confirmations: n })), index).map((x) => x.subscription?.id);
    expect(at(3)).toEqual(['sub_a', 'sub_b']);
    expect(at(4)).toEqual(['sub_a']);
    expect(at(6)).toEqual(['sub_a']);
    expect(at(7)).toEqual([]);
  });

  it('sends block events to chain subscriptions only', () => {
    const e = decodeOutboxRow(row({ type: 'block.disconnected', addr_key: null, address: null, txid: null }));
    expect(matchEvent(e, index).map((x) => x.subscription?.id)).toEqual(['sub_chain']);
  });

  it('sends key events (stamp.confirmed and stamp.unconfirmed) to their key with no subscription', () => {
    for (const type of ['stamp.confirmed', 'stamp.unconfirmed'] as const) {
      const e = decodeOutboxRow(
        row({ type, key_id: 9n, addr_key: null, address: null, confirmations: type === 'stamp.confirmed' ? 1 : 0 }),
      );
      expect(e.type).toBe(type);
      expect(matchEvent(e, index)).toEqual([{ event: e, keyId: 9n, subscription: null }]);
      expect(toPayload(e, null)).toMatchObject({
        type,
        subscription_id: null,
        address: null,
        confirmations: type === 'stamp.confirmed' ? 1 : 0,
      });
    }
    expect(() => decodeOutboxRow(row({ type: 'stamp.unconfirmed', key_id: null }))).toThrow('has no key_id');
  });

  it('never delivers an event older than the subscription', () => {
    expect(matchEvent(decodeOutboxRow(row({ seq: 10n })), index).some((d) => d.subscription?.id === 'sub_late')).toBe(false);
    expect(matchEvent(decodeOutboxRow(row({ seq: 11n })), index).some((d) => d.subscription?.id === 'sub_late')).toBe(true);
  });

  it("keeps event order across a batch and lists the batch's addresses", () => {
    const events = [row({ seq: 1n }), row({ seq: 2n, addr_key: B }), row({ seq: 3n })].map(decodeOutboxRow);
    expect(matchEvents(events, index).map((d) => `${d.event.seq}:${d.subscription?.id}`)).toEqual([
      '1:sub_a',
      '1:sub_b',
      '2:sub_other',
      '3:sub_a',
      '3:sub_b',
    ]);
    expect(addressKeysOf(events).sort()).toEqual([A, B]);
  });

  it('serializes a delivery once with its subscription and names it without a colon', () => {
    const [d] = matchEvent(decodeOutboxRow(row({})), index);
    expect(JSON.parse(deliveryJson(d!))).toMatchObject({ id: 10, subscription_id: 'sub_a', action: null });
    expect(deliveryId('sub_a', 10n)).toBe('sub_a-10');
  });
});

describe('deliveryJson', () => {
  it('is exactly JSON.stringify(toPayload(…)) for every subscription of an event', () => {
    const e = decodeOutboxRow(row({ type: 'tx.replaced', replaced_by: BLOCK }));
    const subs = [sub({ id: 'sub_a' }), sub({ id: 'sub_b', hookId: 'hook_x"quote' }), null];
    for (const s of subs) {
      expect(deliveryJson({ event: e, keyId: 1n, subscription: s })).toBe(JSON.stringify(toPayload(e, s)));
    }
    const b = decodeOutboxRow(row({ type: 'block.connected', addr_key: null, address: null }));
    expect(deliveryJson({ event: b, keyId: 1n, subscription: subs[0]! })).toBe(JSON.stringify(toPayload(b, subs[0]!)));
  });
});

describe('wallet subscriptions (src/db/wallet-event.ts)', () => {
  const txid = new Uint8Array(32).fill(1);
  const other = new Uint8Array(32).fill(2);
  const members = new Map([
    [A, [{ walletId: 'wal_1', path: '0/3' }]],
    [
      B,
      [
        { walletId: 'wal_1', path: '1/0' },
        { walletId: 'wal_2', path: '0/0' },
      ],
    ],
  ]);

  it("one part per wallet and event, on the first row of the wallet, with the wallet's amounts", () => {
    const rows = [
      { type: 'tx.unconfirmed', addrKey: A, address: 'a', txid, confirmations: 0, received: 0n, sent: 9000n },
      { type: 'tx.unconfirmed', addrKey: B, address: 'b', txid, confirmations: 0, received: 4000n, sent: 0n },
      {
        type: 'tx.unconfirmed',
        addrKey: '33333333-3333-3333-3333-333333333333',
        address: 'c',
        txid,
        confirmations: 0,
        received: 4500n,
        sent: 0n,
      },
      { type: 'tx.unconfirmed', addrKey: B, address: 'b', txid: other, confirmations: 0, received: 100n, sent: 0n },
    ];
    const data = buildWalletParts(rows, members);
    expect(data[0]).toEqual({
      wallets: [
        {
          id: 'wal_1',
          address: 'a',
          path: '0/3',
          received: 4000,
          sent: 9000,
          net: -5000,
          addresses: [
            { address: 'a', path: '0/3', received: 0, sent: 9000 },
            { address: 'b', path: '1/0', received: 4000, sent: 0 },
          ],
        },
      ],
    });
    expect(data[1]).toEqual({
      wallets: [
        {
          id: 'wal_2',
          address: 'b',
          path: '0/0',
          received: 4000,
          sent: 0,
          net: 4000,
          addresses: [{ address: 'b', path: '0/0', received: 4000, sent: 0 }],
        },
      ],
    });
    expect(data[2]).toBeNull();
    expect(data[3]?.wallets.map((w) => [w.id, w.net])).toEqual([
      ['wal_1', 100],
      ['wal_2', 100],
    ]);
  });

  it("matches the lead row to the wallet's subscriptions; the payload is the wallet's view", () => {
    const [d0] = buildWalletParts(
      [
        {
          type: 'tx.confirmed',
          addrKey: A,
          address: 'bcrt1qaddressa',
          txid: TXID,
          blockHash: BLOCK,
          height: 7,
          confirmations: 1,
          received: 5000n,
          sent: 0n,
        },
      ],
      members,
    );
    const e = decodeOutboxRow(row({ data: d0 }));
    const subs = indexSubscriptions([
      sub({ id: 'sub_w', kind: 'wallet', addrKey: null, walletId: 'wal_1', hookId: 'hook_x' }),
      sub({ id: 'sub_a' }),
    ]);
    expect(walletIdsOf([e])).toEqual(['wal_1']);
    const ds = matchEvent(e, subs);
    expect(ds.map((d) => [d.subscription?.id, d.wallet?.id])).toEqual([
      ['sub_a', undefined],
      ['sub_w', 'wal_1'],
    ]);
    const body = JSON.parse(deliveryJson(ds[1]!));
    expect(body).toMatchObject({
      subscription_id: 'sub_w',
      action: 'hook_x',
      wallet: 'wal_1',
      address: 'bcrt1qaddressa',
      path: '0/3',
      received: 5000,
      sent: 0,
      net: 5000,
      type: 'tx.confirmed',
      confirmations: 1,
    });
    expect(JSON.parse(deliveryJson(ds[0]!))).not.toHaveProperty('wallet');
    // tx.confirmations above the wallet subscription's target are not delivered
    const deep = decodeOutboxRow(row({ type: 'tx.confirmations', confirmations: 9, data: d0 }));
    expect(matchEvent(deep, subs)).toEqual([]);
  });
});

/*
 * The feed message between the relay and the stream hubs: version 2 carries each event's JSON
 * once (template + per-delivery fragments) and decodes to exactly the JSON every delivery sends;
 * version 1 messages are still read; anything else is refused.
 */
describe('feed message', () => {
  const subs = [
    sub({ id: 'sub_a', keyId: 1n }),
    sub({ id: 'sub_b', keyId: 2n, hookId: 'hook_b', hookType: 'http', hookActive: true }),
    sub({ id: 'sub_c', keyId: 3n, kind: 'chain', addrKey: null }),
    sub({ id: 'sub_d', keyId: 4n, kind: 'chain', addrKey: null, hookId: 'hook_"d"', hookType: 'http', hookActive: true }),
    sub({ id: 'sub_w', keyId: 5n, kind: 'wallet', addrKey: null, walletId: 'wal_1' }),
  ];
  const [wallet] = buildWalletParts(
    [
      {
        type: 'tx.confirmed',
        addrKey: A,
        address: 'bcrt1qaddressa',
        txid: TXID,
        blockHash: BLOCK,
        height: 7,
        confirmations: 1,
        received: 5000n,
        sent: 0n,
      },
    ],
    new Map([[A, [{ walletId: 'wal_1', path: '0/3' }]]]),
  );
  const events = [
    decodeOutboxRow(row({ seq: 10n, data: wallet })),
    decodeOutboxRow(
      row({
        seq: 11n,
        type: 'block.connected',
        addr_key: null,
        address: null,
        txid: null,
        confirmations: null,
        received: null,
        sent: null,
      }),
    ),
    decodeOutboxRow(row({ seq: 12n, type: 'tx.unconfirmed', block_hash: null, height: null, confirmations: 0 })),
  ];
  const deliveries = matchEvents(events, indexSubscriptions(subs));
  // As the relay builds them: parts where the delivery has them.
  const items: FeedItem[] = deliveries.map((d) => {
    const parts = deliveryParts(d);
    return parts
      ? { keyId: d.keyId, seq: d.event.seq, json: partsJson(parts), parts }
      : { keyId: d.keyId, seq: d.event.seq, json: deliveryJson(d) };
  });

  it('decodes to the JSON every delivery sends, each event template carried once', () => {
    expect(deliveries.some((d) => d.wallet)).toBe(true);
    expect(items.filter((i) => i.parts).length).toBeGreaterThan(3);
    const text = encodeFeedBatch({ from: 9n, to: 12n, items });
    const wire = JSON.parse(text) as { v: number; templates: unknown[] };
    expect(wire.v).toBe(2);
    expect(wire.templates).toHaveLength(3);
    const back = decodeFeedBatch(text);
    expect(back.from).toBe(9n);
    expect(back.to).toBe(12n);
    expect(back.items.map((i) => [i.keyId, i.seq, i.json])).toEqual(deliveries.map((d) => [d.keyId, d.event.seq, deliveryJson(d)]));
    for (const i of back.items) JSON.parse(i.json);
  });

  it('still reads version 1 messages', () => {
    const v1 = JSON.stringify({ v: 1, from: '9', to: '12', items: items.map((i) => [i.keyId.toString(), i.seq.toString(), i.json]) });
    expect(decodeFeedBatch(v1).items.map((i) => i.json)).toEqual(items.map((i) => i.json));
  });

  it('refuses what is not a feed batch', () => {
    expect(() => decodeFeedBatch('{"v":3,"from":"1","to":"2","items":[]}')).toThrow(TypeError);
    expect(() => decodeFeedBatch('{"v":2,"from":"1","to":"2","templates":[],"items":[["1","2",0,"null","null"]]}')).toThrow(TypeError);
    expect(() => decodeFeedBatch('{"v":2,"from":"1","to":"2","templates":[["a","b"]],"items":[["1","2",0,"null","null"]]}')).toThrow(
      TypeError,
    );
    expect(() => decodeFeedBatch('{"v":2,"from":"1","to":"2","templates":[],"items":[[1,"2","{}"]]}')).toThrow(TypeError);
  });
});
