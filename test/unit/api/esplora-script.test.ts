/**
 * Esplora's view of scripts (api/dialects/esplora-script.ts): rust-bitcoin's assembly as
 * Blockstream's electrs prints it (the taproot output below is a mainnet output with the assembly
 * public Esplora servers answer for it), electrs's script type names, the address an output
 * encodes (checked by decoding it back to the script), and the redeem and witness scripts an
 * input reveals.
 */
import { describe, expect, it } from 'vitest';
import { innerScripts, scriptAddress, scriptAsm, scriptType } from '../../../api/dialects/esplora-script.js';
import { addressToScript } from '../../../src/bitcoin/address.js';

const h = (s: string) => Buffer.from(s, 'hex');
const key20 = '89abcdefabbaabbaabbaabbaabbaabbaabbaabba';
const pub33 = '02' + '11'.repeat(32);

describe('Esplora script views', () => {
  it('assembly as rust-bitcoin prints it', () => {
    const cases: [string, string][] = [
      [`76a914${key20}88ac`, `OP_DUP OP_HASH160 OP_PUSHBYTES_20 ${key20} OP_EQUALVERIFY OP_CHECKSIG`],
      [
        '5120727da28731cccc6f227d0200b43c384ae06e717f6f14f62f31145a8cbb145048',
        'OP_PUSHNUM_1 OP_PUSHBYTES_32 727da28731cccc6f227d0200b43c384ae06e717f6f14f62f31145a8cbb145048',
      ],
      [`0014${key20}`, `OP_0 OP_PUSHBYTES_20 ${key20}`],
      ['6a4c03aabbcc', 'OP_RETURN OP_PUSHDATA1 aabbcc'],
      ['6a4d0200aabb', 'OP_RETURN OP_PUSHDATA2 aabb'],
      ['4c05aa', 'OP_PUSHDATA1 <push past end>'],
      ['4d01', '<unexpected end>'],
      ['4fb1b2b3b9babbfeff', 'OP_PUSHNUM_NEG1 OP_CLTV OP_CSV OP_NOP4 OP_NOP10 OP_CHECKSIGADD OP_RETURN_187 OP_RETURN_254 OP_INVALIDOPCODE'],
      [`51210${pub33.slice(1)}52ae`, `OP_PUSHNUM_1 OP_PUSHBYTES_33 ${pub33} OP_PUSHNUM_2 OP_CHECKMULTISIG`],
      ['', ''],
    ];
    for (const [script, asm] of cases) expect(scriptAsm(h(script)), script).toBe(asm);
  });

  it('script types and addresses as electrs names them', () => {
    // [script, type, address prefix on regtest (none: no address)]
    const cases: [string, string, RegExp | undefined][] = [
      [`76a914${key20}88ac`, 'p2pkh', /^[mn]/],
      [`a914${key20}87`, 'p2sh', /^2/],
      [`0014${key20}`, 'v0_p2wpkh', /^bcrt1q/],
      [`0020${'22'.repeat(32)}`, 'v0_p2wsh', /^bcrt1q/],
      [`5120${'33'.repeat(32)}`, 'v1_p2tr', /^bcrt1p/],
      [`21${pub33}ac`, 'p2pk', undefined],
      ['6a02beef', 'op_return', undefined],
      ['', 'empty', undefined],
      ['ba51', 'provably_unspendable', undefined],
      ['5051', 'provably_unspendable', undefined],
      [`51210${pub33.slice(1)}52ae`, 'unknown', undefined],
      ['51024e73', 'unknown', /^bcrt1p/],
      ['5151', 'unknown', undefined],
    ];
    for (const [script, type, prefix] of cases) {
      expect(scriptType(h(script)), script).toBe(type);
      const address = scriptAddress(h(script), 'regtest');
      if (prefix === undefined) expect(address, script).toBeUndefined();
      else {
        expect(address, script).toMatch(prefix);
        // (the address decodes back to the script: it encodes that output, nothing else)
        expect(Buffer.from(addressToScript(address!, 'regtest')).toString('hex'), script).toBe(script);
      }
    }
  });

  it('inner scripts: the redeem script of a P2SH spend, the witness script of P2WSH (nested or not)', () => {
    const wpkh = h(`0014${key20}`);
    const wsh = h(`0020${'22'.repeat(32)}`);
    const witnessScript = h(`${'21' + pub33}ac`);
    expect(innerScripts(h(`a914${key20}87`), h(`16${wpkh.toString('hex')}`), [h('30'), h(pub33)])).toEqual({ redeem: wpkh });
    expect(innerScripts(h(`a914${key20}87`), h(`22${wsh.toString('hex')}`), [h('30'), witnessScript])).toEqual({
      redeem: wsh,
      witness: witnessScript,
    });
    expect(innerScripts(wsh, h(''), [h('30'), witnessScript])).toEqual({ witness: witnessScript });
    expect(innerScripts(wpkh, h(''), [h('30'), h(pub33)])).toEqual({});
    // (a scriptSig ending with an opcode that is no push reveals no redeem script)
    expect(innerScripts(h(`a914${key20}87`), h(`16${wpkh.toString('hex')}51`), [])).toEqual({});
  });
});
