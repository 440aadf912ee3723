/**
 * The Electrum server's caps across connections (docs/electrum.md "Limits"): connections per
 * client address and in total (TCP and TLS together), the total budget of script-hash
 * subscriptions, and the server's own database sessions. Clients connect from several loopback addresses (127.0.0.1, .2, .3) to real
 * sockets; one address at its cap does not lock another out.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeBitcoind } from '../../support/bitcoind.js';
import { connectElectrum, electrumScriptHash, ElectrumRpcError, type ElectrumTestClient } from '../../support/electrum-client.js';
import { waitFor } from '../../support/wait.js';
import type { ElectrumHandle } from '../../../electrum/main.js';
import { startElectrumStack, type ElectrumStack } from './harness.js';

describeBitcoind('Electrum caps across connections', () => {
  let s: ElectrumStack;
  const opened: ElectrumTestClient[] = [];
  const open = async (port: number, from: string, tls = false) => {
    const c = await connectElectrum(port, { localAddress: from, tls });
    opened.push(c);
    return c;
  };
  /** A refused plain-TCP client reads one error line, then the socket ends. */
  const refusal = async (c: ElectrumTestClient) => {
    await c.closed;
    expect(c.loose).toHaveLength(1);
    return (c.loose[0] as { error: { code: number; message: string } }).error;
  };

  beforeAll(async () => {
    s = await startElectrumStack();
  }, 240_000);
  afterAll(async () => {
    for (const c of opened) c.close();
    await s?.stop();
  });

  it('connections per address: one address at its cap is refused with a reason, others still connect; a closed connection frees its slot', async () => {
    const e = await s.electrumOn({ electrumMaxConnectionsPerIp: 3, electrumMaxConnections: 100 });
    const port = e.tcpPort!;
    const first = [await open(port, '127.0.0.1'), await open(port, '127.0.0.1'), await open(port, '127.0.0.1')];
    for (const c of first) expect(await c.request('server.ping')).toBeNull();
    expect(await refusal(await open(port, '127.0.0.1'))).toEqual({
      code: -32000,
      message: 'too many connections from your address: at most 3',
    });
    // another address is not locked out
    const other = await open(port, '127.0.0.2');
    expect(await other.request('server.version', ['other', ['1.4', '1.6']])).toEqual(['blockwire/0.1', '1.6']);
    expect(await other.request('server.ping')).toBeNull();
    // the first address gets a slot back once one of its connections is gone
    first[0]!.close();
    await waitFor('the closed connection to be uncounted', () => e.connections() === 3);
    expect(await (await open(port, '127.0.0.1')).request('server.ping')).toBeNull();
    expect(e.stats().refusedConnections).toBe(1);
  });

  it('connections in total, TCP and TLS together: past the cap every address is refused (TLS before its handshake)', async () => {
    const e: ElectrumHandle = await s.electrumOn({ electrumTlsPort: 0, electrumMaxConnectionsPerIp: 10, electrumMaxConnections: 4 });
    const tcp = e.tcpPort!;
    const tls = e.tlsPort!;
    const held = [
      await open(tcp, '127.0.0.1'),
      await open(tcp, '127.0.0.2'),
      await open(tls, '127.0.0.1', true),
      await open(tls, '127.0.0.2', true),
    ];
    for (const c of held) expect(await c.request('server.ping')).toBeNull();
    expect(await refusal(await open(tcp, '127.0.0.3'))).toEqual({ code: -32000, message: 'server busy: 4 connections open' });
    const tlsRefused = await connectElectrum(tls, { localAddress: '127.0.0.3', tls: true }).then(
      async (c) => {
        opened.push(c);
        await c.closed;
        return 'closed';
      },
      () => 'handshake cut',
    );
    expect(['closed', 'handshake cut']).toContain(tlsRefused);
    held[2]!.close();
    await waitFor('the closed TLS connection to be uncounted', () => e.connections() === 3);
    expect(await (await open(tls, '127.0.0.3', true)).request('server.ping')).toBeNull();
  });

  it('subscriptions in total: past the budget a subscription is refused with error 1, until a connection gives its own back', async () => {
    const e = await s.electrumOn({ electrumMaxSubscriptionsTotal: 3, electrumMaxSubscriptions: 10 });
    const port = e.tcpPort!;
    const sh = (n: number) => electrumScriptHash(`0014${n.toString(16).padStart(40, '0')}`);
    const a = await open(port, '127.0.0.1');
    const b = await open(port, '127.0.0.2');
    expect(await a.request('blockchain.scripthash.subscribe', [sh(1)])).toBeNull();
    expect(await a.request('blockchain.scripthash.subscribe', [sh(2)])).toBeNull();
    expect(await b.request('blockchain.scripthash.subscribe', [sh(1)])).toBeNull();
    // subscribing again to one already held costs nothing
    expect(await b.request('blockchain.scripthash.subscribe', [sh(1)])).toBeNull();
    const err = await b.request('blockchain.scripthash.subscribe', [sh(3)]).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ElectrumRpcError);
    expect(err).toMatchObject({
      code: 1,
      rpcMessage: 'server subscription budget reached: 3 subscriptions across all connections; try again later or another server',
    });
    // an unsubscribe gives one back
    expect(await a.request('blockchain.scripthash.unsubscribe', [sh(2)])).toBe(true);
    expect(await b.request('blockchain.scripthash.subscribe', [sh(3)])).toBeNull();
    await expect(b.request('blockchain.scripthash.subscribe', [sh(4)])).rejects.toMatchObject({ code: 1 });
    // a closed connection gives all of its own back
    a.close();
    await waitFor('the closed connection to be gone', () => e.connections() === 1);
    expect(await b.request('blockchain.scripthash.subscribe', [sh(4)])).toBeNull();
  });

  it('database connections: the methods read through a pool of their own (prepared statements, at most 10), closed when the server stops', async () => {
    const sessions = async () =>
      (
        await sql<{ n: number }>`SELECT count(*)::int4 AS n FROM pg_stat_activity
          WHERE application_name = 'blockwire-electrum' AND datname = current_database()`.execute(s.db.db)
      ).rows[0]!.n;
    const before = await sessions();
    const e = await s.electrumOn({});
    const c = await open(e.tcpPort!, '127.0.0.1');
    const tip = await s.node.tip();
    const block = await s.node.call<{ tx: string[] }>('getblock', [tip.hash, 1]);
    // a transaction found by txid (the statement whose planning the prepared statements spare), twice
    for (let i = 0; i < 2; i++) {
      const m = await c.request<{ block_height: number; pos: number }>('blockchain.transaction.get_merkle', [block.tx[0], tip.height]);
      expect(m).toMatchObject({ block_height: tip.height, pos: 0 });
    }
    const during = await sessions();
    expect(during).toBeGreaterThan(before);
    expect(during - before).toBeLessThanOrEqual(10);
    c.close();
    await e.stop();
    await waitFor("the server's own database sessions to close", async () => (await sessions()) === before);
  });
});
