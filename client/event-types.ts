/**
 * Every event kind the server sends, as it names them: data only, shared by the daemon (its
 * outbox column type) so that the SDK's list and the server's cannot differ.
 * @module
 */
export const EVENT_TYPES = [
  'tx.unconfirmed',
  'tx.confirmed',
  'tx.confirmations',
  'tx.reorged',
  'tx.replaced',
  'tx.dropped',
  'block.connected',
  'block.disconnected',
  'stamp.confirmed',
  'stamp.unconfirmed',
] as const;

/** An event kind the server sends today. */
export type KnownEventType = (typeof EVENT_TYPES)[number];
