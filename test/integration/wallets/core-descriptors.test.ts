/**
 * Descriptors against a real Bitcoin Core: for every descriptor type a wallet takes, the
 * normalized, checksummed text equals `getdescriptorinfo`'s (a multipath one: its expansion
 * equals `multipath_expansion`, and Core accepts our checksum of the multipath text), the
 * addresses of indexes 0–40 on every branch equal `deriveaddresses`, and a wrong checksum is
 * refused with Core's message.
 */
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { outputAddresses } from '../../../src/bitcoin/address.js';
import { expandDescriptor, formatDescriptor, parseDescriptor, ScriptDeriver, withChecksum } from '../../../src/bitcoin/descriptor.js';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { BitcoindRpcError, describeBitcoind, startBitcoind, type Bitcoind } from '../../support/bitcoind.js';

const versions = bip32Versions('regtest');
const master = (n: number) => HDKey.fromMasterSeed(new Uint8Array(32).fill(n), versions);
const fp = (n: number) => master(n).fingerprint.toString(16).padStart(8, '0');
const account = (n: number, path: string) => master(n).derive(path).publicExtendedKey;

const a = account(1, "m/84'/1'/0'");
const b = account(2, "m/48'/1'/0'/2'");
const c = account(3, "m/48'/1'/0'/2'");
// a vpub (SLIP-132 P2WPKH on test networks) for the same key as `a`
const DESCRIPTORS = [
  `pkh([${fp(1)}/44'/1'/0']${a}/0/*)`,
  `pkh(${a}/<0;1>/*)`,
  `wpkh([${fp(1)}/84h/1h/0h]${a}/<0;1>/*)`,
  `wpkh(${a}/1/*)`,
  `sh(wpkh([${fp(1)}/49h/1'/0h]${a}/0/*))`,
  `tr([${fp(1)}/86'/1h/0']${a}/0/*)`,
  `tr(${a}/<0;1>/*)`,
  `wsh(multi(2,${a}/0/*,${b}/0/*,${c}/0/*))`,
  `wsh(sortedmulti(2,[${fp(2)}/48'/1'/0'/2']${b}/<0;1>/*,[${fp(3)}/48'/1'/0'/2']${c}/<0;1>/*))`,
  `sh(wsh(sortedmulti(1,${a}/0/*,${b}/0/*)))`,
  `sh(wsh(multi(2,${a}/<0;1>/*,${b}/<0;1>/*)))`,
  `sh(multi(2,${a}/7/*,${c}/7/*))`,
  `sh(sortedmulti(1,${a}/0/5/*,${c}/0/5/*))`,
];

describeBitcoind('descriptors against Bitcoin Core (getdescriptorinfo, deriveaddresses)', () => {
  let core: Bitcoind;
  beforeAll(async () => {
    core = await startBitcoind();
  });
  afterAll(async () => {
    await core?.stop();
  });

  for (const text of DESCRIPTORS) {
    it(text.replace(/[tx]pub[1-9A-HJ-NP-Za-km-z]{100,}/g, 'KEY'), async () => {
      const d = parseDescriptor(text, 'regtest');
      const ours = withChecksum(formatDescriptor(d));
      const info = await core.call<{ descriptor: string; checksum: string; multipath_expansion?: string[] }>('getdescriptorinfo', [text]);
      if (d.branches === 1) {
        expect(ours).toBe(info.descriptor);
      } else {
        expect(expandDescriptor(d)).toEqual(info.multipath_expansion);
        // Core checks the checksum we give the multipath text (it answers its first branch as `descriptor`).
        await expect(core.call('getdescriptorinfo', [ours])).resolves.toBeTruthy();
      }
      // The parsed form of our own output parses to the same text (stable).
      expect(withChecksum(formatDescriptor(parseDescriptor(ours, 'regtest')))).toBe(ours);
      for (const [branch, single] of expandDescriptor(d).entries()) {
        const expected = await core.call<string[]>('deriveaddresses', [single, [0, 40]]);
        const deriver = new ScriptDeriver(d, branch);
        const mine = Array.from({ length: 41 }, (_, i) => outputAddresses(deriver.derive(i).script, 'regtest')[0]);
        expect(mine).toEqual(expected);
      }
    });
  }

  it('a wrong checksum: the same message as Core', async () => {
    const good = withChecksum(formatDescriptor(parseDescriptor(DESCRIPTORS[3]!, 'regtest')));
    const bad = good.slice(0, -1) + (good.endsWith('q') ? 'p' : 'q');
    const coreErr = await core.call('getdescriptorinfo', [bad]).catch((e: unknown) => e);
    expect(coreErr).toBeInstanceOf(BitcoindRpcError);
    expect(() => parseDescriptor(bad, 'regtest')).toThrow((coreErr as BitcoindRpcError).message);
  });
});
