import { beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { hexToBytes } from '../../../src/bitcoin/hash.js';
import type { Coin } from '../../../devnode/chain.js';
import { txidOf } from '../../../devnode/chain.js';
import { formatAmount, formatDouble, writeCoreJson, amount } from '../../../devnode/core-json.js';
import { descriptorChecksum, inferDescriptor } from '../../../devnode/descriptor.js';
import { regtestScript, scriptToAddress } from '../../../devnode/address.js';
import { blockJson, chainInfoJson, mempoolInfoJson, scriptPubKeyJson, txJson } from '../../../devnode/json-views.js';
import { scriptToAsm } from '../../../devnode/script.js';
import { describeFixtures } from '../../support/fixtures.js';
import { createTestNode } from './harness.js';
import { loadRecording, objectText, shapeOf, walkObjects } from './recording.js';

/** What a client parses from the devnode's JSON text. */
function parsed(v: unknown): unknown {
  return JSON.parse(writeCoreJson(v));
}

it('writes doubles with 16 significant digits and amounts with 8 decimals, as UniValue does', () => {
  expect(formatDouble(4.6565423739069247e-10)).toBe('4.656542373906925e-10');
  expect(formatDouble(2.005500405742815e-6)).toBe('2.005500405742815e-06');
  expect(formatDouble(0.5)).toBe('0.5');
  expect(formatDouble(1e16)).toBe('1e+16');
  expect(formatDouble(0.0001)).toBe('0.0001');
  expect(formatAmount(5_000_000_000n)).toBe('50.00000000');
  expect(formatAmount(-40_000_000n)).toBe('-0.40000000');
  expect(writeCoreJson({ a: amount(100n), b: [1, 'x', null, true], c: undefined, d: 1.5 })).toBe(
    '{"a":0.00000100,"b":[1,"x",null,true],"d":1.5}',
  );
});

describeFixtures('devnode JSON views against the recorded Core 30 answers', () => {
  let rec: Awaited<ReturnType<typeof loadRecording>>;
  beforeAll(async () => {
    rec = await loadRecording();
  });

  it('shows every recorded output script with the same asm, desc, address and type', () => {
    let n = 0;
    for (const call of rec.rpc) {
      walkObjects(call.response.result, (o) => {
        const spk = o.scriptPubKey as Record<string, unknown> | undefined;
        if (spk && typeof spk === 'object' && typeof spk.hex === 'string') {
          expect(scriptPubKeyJson(hexToBytes(spk.hex))).toEqual(spk);
          if (typeof spk.address === 'string') expect(regtestScript(spk.address)).toEqual(hexToBytes(spk.hex));
          n++;
        }
        const sig = o.scriptSig as { asm: string; hex: string } | undefined;
        if (sig && typeof sig === 'object' && typeof sig.hex === 'string') expect(scriptToAsm(hexToBytes(sig.hex), true)).toBe(sig.asm);
      });
    }
    expect(n).toBeGreaterThan(50);
  });

  it('computes descriptor checksums of every recorded descriptor', () => {
    const descs = new Set<string>();
    for (const call of rec.rpc) {
      walkObjects(call.response.result, (o) => {
        for (const k of ['desc', 'descriptor', 'parent_desc']) if (typeof o[k] === 'string') descs.add(o[k] as string);
        if (Array.isArray(o.parent_descs)) for (const d of o.parent_descs) descs.add(d as string);
      });
    }
    expect(descs.size).toBeGreaterThan(20);
    for (const d of descs) {
      const [body, sum] = d.split('#') as [string, string];
      expect(descriptorChecksum(body)).toBe(sum);
    }
    expect(inferDescriptor(hexToBytes('6a24aa21a9ede2f61c3f71d1defd3fa999dfa36953755c690689799962b48bebd836974e8cf9'))).toBe(
      'raw(6a24aa21a9ede2f61c3f71d1defd3fa999dfa36953755c690689799962b48bebd836974e8cf9)#cav96mf3',
    );
    expect(scriptToAddress(hexToBytes('51024e73'))).toBe('bcrt1pfeesnyr2tx');
  });

  it('writes the genesis block JSON (REST, verbosity 3) byte for byte as Core', () => {
    const { node } = createTestNode();
    const recorded = rec.restCall('0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206.json', '/block/');
    expect(`${writeCoreJson(blockJson(node, node.chain.tip(), 3))}\n`).toBe(recorded.body.text);
    expect(parsed(blockJson(node, node.chain.tip(), 2))).toEqual(rec.call(9).response.result);
    expect(parsed(blockJson(node, node.chain.tip(), 1))).toEqual(rec.call(8).response.result);
  });

  it('writes chain info as Core does for a fresh node (all but the clock-dependent verificationprogress)', () => {
    const { node } = createTestNode();
    const mask = (t: string) => t.replace(/"verificationprogress":[^,]+,/, '"verificationprogress":X,');
    expect(mask(`${writeCoreJson(chainInfoJson(node))}\n`)).toBe(mask(rec.restCall('/rest/chaininfo.json').body.text!));
    expect(shapeOf(parsed(mempoolInfoJson(node)))).toEqual(shapeOf(rec.call(43).response.result));
  });

  it('writes each transaction of block 102 as the REST block JSON does (prevouts, fee, amounts)', () => {
    const raw = rec.restCall('1d5d111ad5001e7a2f0ed162bec7d18d83f625ffeec4f17492957dd636851c41.bin', '/block/').body.hex!;
    const text = rec.restCall('1d5d111ad5001e7a2f0ed162bec7d18d83f625ffeec4f17492957dd636851c41.json', '/block/1d5d').body.text!;
    const verbose3 = rec.call(63).response.result as {
      tx: { vin: { prevout?: { generated: boolean; height: number; value: number; scriptPubKey: { hex: string } } }[] }[];
    };
    const block = decodeBlock(hexToBytes(raw));
    block.txs.forEach((tx, i) => {
      const undo: Coin[] | null =
        i === 0
          ? null
          : verbose3.tx[i]!.vin.map((v) => ({
              value: BigInt(Math.round(v.prevout!.value * 1e8)),
              script: hexToBytes(v.prevout!.scriptPubKey.hex),
              height: v.prevout!.height,
              coinbase: v.prevout!.generated,
            }));
      expect(writeCoreJson(txJson(tx, { undo, prevouts: true }))).toBe(objectText(text, 'txid', txidOf(tx)));
    });
  });
});
