/**
 * One address → script contract: `addressToScript(address, network)` gives the output script
 * the address pays on that network and throws for anything that is not an address of that
 * network — the kernel's (src/bitcoin/address.ts, AddressError) and the SDK's (client/keys.ts,
 * TypeError) alike. Checked on Core's key_io vectors, valid and invalid, on every network.
 */
import { hex } from '@scure/base';
import { expect, it } from 'vitest';
import { addressToScript as sdkAddressToScript } from '../../../client/keys.js';
import { AddressError, addressToScript } from '../../../src/bitcoin/address.js';
import { NETWORK_NAMES } from '../../../src/bitcoin/network.js';
import { describeFixtures, readFixtureJson } from '../../support/fixtures.js';

const outcome = (f: () => Uint8Array, error: new (...a: never[]) => Error): string => {
  try {
    return hex.encode(f());
  } catch (err) {
    if (!(err instanceof error)) throw err;
    return 'refused';
  }
};

describeFixtures('address → script: the kernel and the SDK', () => {
  it('give the same script, or both refuse, for every vector on every network', async () => {
    const valid = await readFixtureJson<[string, string, { isPrivkey: boolean }][]>('mainnet', 'vectors', 'core_key_io_valid.json');
    const invalid = await readFixtureJson<[string][]>('mainnet', 'vectors', 'core_key_io_invalid.json');
    let scripts = 0;
    for (const [text] of [...valid, ...invalid]) {
      for (const network of NETWORK_NAMES) {
        const kernel = outcome(() => addressToScript(text, network), AddressError);
        expect(
          outcome(() => sdkAddressToScript(text, network), TypeError),
          `${text} on ${network}`,
        ).toBe(kernel);
        if (kernel !== 'refused') scripts++;
      }
    }
    // Each valid address decodes on its own network at least (testnets share prefixes).
    expect(scripts).toBeGreaterThanOrEqual(valid.filter((v) => !v[2].isPrivkey).length);
  });
});
