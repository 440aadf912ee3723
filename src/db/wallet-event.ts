/**
 * The wallet part of outbox events (docs/wallets.md "Events"), written by the indexer in the
 * `data` column of tx events and read by the streams' matching: one format, one module. The
 * indexer writes one row per watched address a transaction touches; for each wallet with live
 * subscriptions, the first of those rows (in the order they are appended) among the wallet's
 * addresses leads: its `data.wallets` names the wallet, the lead address and path, the
 * wallet's amounts over all its addresses in that transaction, and each of those addresses.
 * Wallet subscribers get that one delivery per transaction and event; address subscribers
 * keep one per address, as before.
 * @module
 */

/** One address of a wallet that the transaction touches. */
export type WalletAddressPart = { address: string; path: string; received: number; sent: number };

/** A wallet's view of one tx event. */
export type WalletPart = {
  /** Wallet id. */
  id: string;
  /** The lead address (the row carrying this part) and its derivation path. */
  address: string;
  path: string;
  /** Sats the transaction pays to / spends from the wallet's addresses, and their difference. */
  received: number;
  sent: number;
  net: number;
  addresses: WalletAddressPart[];
};

/** What the indexer knows of one event row while building parts. */
export type WalletEventRow = {
  type: string;
  addrKey?: string;
  address?: string;
  txid?: Uint8Array;
  blockHash?: Uint8Array;
  height?: number;
  confirmations?: number;
  received?: bigint;
  sent?: bigint;
};

/** A wallet address with live wallet subscriptions: its wallet and path (addr_key → entries). */
export type WalletMembership = ReadonlyMap<string, readonly { walletId: string; path: string }[]>;

const hex = (b: Uint8Array | undefined) => (b === undefined ? '' : Buffer.from(b).toString('hex'));

/**
 * PURE: the `data` of each row (null for most): rows of one event (same type, transaction,
 * block and confirmations) are grouped, and per wallet the group's first row of the wallet
 * carries its part.
 */
export function buildWalletParts(rows: readonly WalletEventRow[], members: WalletMembership): ({ wallets: WalletPart[] } | null)[] {
  const data: ({ wallets: WalletPart[] } | null)[] = rows.map(() => null);
  if (members.size === 0) return data;
  const groups = new Map<string, number[]>();
  rows.forEach((r, i) => {
    if (r.addrKey === undefined || r.txid === undefined || !members.has(r.addrKey)) return;
    const g = `${r.type}|${hex(r.txid)}|${hex(r.blockHash)}|${r.height ?? ''}|${r.confirmations ?? ''}`;
    const list = groups.get(g);
    if (list) list.push(i);
    else groups.set(g, [i]);
  });
  for (const list of groups.values()) {
    const byWallet = new Map<string, { lead: number; addresses: WalletAddressPart[]; received: bigint; sent: bigint }>();
    for (const i of list) {
      const r = rows[i]!;
      const seen = new Set<string>();
      for (const m of members.get(r.addrKey!)!) {
        if (seen.has(m.walletId)) continue; // (an address on two chains of one wallet counts once)
        seen.add(m.walletId);
        let w = byWallet.get(m.walletId);
        if (!w) byWallet.set(m.walletId, (w = { lead: i, addresses: [], received: 0n, sent: 0n }));
        w.received += r.received ?? 0n;
        w.sent += r.sent ?? 0n;
        w.addresses.push({ address: r.address ?? '', path: m.path, received: Number(r.received ?? 0n), sent: Number(r.sent ?? 0n) });
      }
    }
    for (const [id, w] of byWallet) {
      const lead = w.addresses[0]!;
      const part: WalletPart = {
        id,
        address: lead.address,
        path: lead.path,
        received: Number(w.received),
        sent: Number(w.sent),
        net: Number(w.received - w.sent),
        addresses: w.addresses,
      };
      const d = data[w.lead];
      if (d) d.wallets.push(part);
      else data[w.lead] = { wallets: [part] };
    }
  }
  return data;
}

/** The wallet parts of an event's `data` (none when absent or not in this format). */
export function readWalletParts(data: unknown): WalletPart[] {
  if (typeof data !== 'object' || data === null) return [];
  const wallets = (data as { wallets?: unknown }).wallets;
  if (!Array.isArray(wallets)) return [];
  return wallets.filter(
    (w): w is WalletPart =>
      typeof w === 'object' && w !== null && typeof (w as WalletPart).id === 'string' && typeof (w as WalletPart).net === 'number',
  );
}
