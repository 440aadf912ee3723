/**
 * JSON text as Bitcoin Core's UniValue writes it: compact, keys in insertion order, amounts as
 * fixed-point with 8 decimals (`ValueFromAmount`: `50.00000000`), doubles with 16 significant
 * digits (`4.656542373906925e-10`), integers plain. Results are built as plain objects whose
 * amounts are `Amount` values and written with `writeCoreJson`.
 * @module
 */

/** A satoshi amount written as Core's `ValueFromAmount` does (BTC with 8 decimals). */
class Amount {
  constructor(readonly sats: bigint) {}
  toJSON(): number {
    return Number(this.sats) / 1e8;
  }
}

/** Shorthand for `new Amount(sats)`. */
export function amount(sats: bigint | number): Amount {
  return new Amount(typeof sats === 'bigint' ? sats : BigInt(sats));
}

/** `ValueFromAmount` text: sign, whole coins, '.', 8 digits. */
export function formatAmount(sats: bigint): string {
  const neg = sats < 0n;
  const abs = neg ? -sats : sats;
  const whole = abs / 100_000_000n;
  const frac = (abs % 100_000_000n).toString().padStart(8, '0');
  return `${neg ? '-' : ''}${whole}.${frac}`;
}

/** A double as C++ `ostream << setprecision(16)` prints it (the `%.16g` rules). */
export function formatDouble(x: number): string {
  if (!Number.isFinite(x)) return 'null';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [mant, expStr] = x.toExponential(15).split('e') as [string, string];
  const exp = Number(expStr);
  if (exp < -4 || exp >= 16) {
    const m = mant.includes('.') ? mant.replace(/0+$/, '').replace(/\.$/, '') : mant;
    const sign = exp < 0 ? '-' : '+';
    return `${m}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  const fixed = x.toFixed(Math.max(0, 15 - exp));
  return fixed.includes('.') ? fixed.replace(/0+$/, '').replace(/\.$/, '') : fixed;
}

function escapeString(s: string): string {
  // JSON.stringify escapes what UniValue escapes, except DEL (0x7f), which UniValue writes as \u007f.
  return JSON.stringify(s).replace(/\x7f/g, '\\u007f');
}

/** Writes `value` as Core would: no whitespace, insertion order, Amount/double formatting. */
export function writeCoreJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (value instanceof Amount) return formatAmount(value.sats);
  switch (typeof value) {
    case 'string':
      return escapeString(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return value.toString();
    case 'number':
      return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER ? String(value) : formatDouble(value);
    default:
      break;
  }
  if (Array.isArray(value)) return `[${value.map(writeCoreJson).join(',')}]`;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    parts.push(`${escapeString(k)}:${writeCoreJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}
