/**
 * The TLS certificate of the Electrum listener: the PEM files named by the settings, or, when
 * none is named, a self-signed one generated once under the data directory (kept and reused,
 * key readable by the owner only). Electrum and Sparrow accept a self-signed server certificate
 * on first use and pin it afterwards.
 * @module
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export type TlsMaterial = { cert: string; key: string; certFile: string; generated: boolean };

/** Reads the configured certificate and key, or loads (creating it the first time) the self-signed one in `dataDir`. */
export async function loadTlsMaterial(opts: {
  certFile?: string | undefined;
  keyFile?: string | undefined;
  dataDir: string;
  hostnames?: readonly string[];
}): Promise<TlsMaterial> {
  if (opts.certFile && opts.keyFile) {
    return {
      cert: await readFile(opts.certFile, 'utf8'),
      key: await readFile(opts.keyFile, 'utf8'),
      certFile: opts.certFile,
      generated: false,
    };
  }
  const dir = join(opts.dataDir, 'electrum-tls');
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  if (existsSync(certFile) && existsSync(keyFile)) {
    return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8'), certFile, generated: false };
  }
  await mkdir(dir, { recursive: true });
  const names = ['localhost', ...(opts.hostnames ?? [])];
  const now = new Date();
  const pems = await generate([{ name: 'commonName', value: 'blockwire-electrum' }], {
    keyType: 'rsa',
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate: new Date(now.getTime() - 86_400_000),
    notAfterDate: new Date(now.getTime() + 10 * 365 * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          ...names.filter((n) => !/^[\d.:]+$/.test(n)).map((value) => ({ type: 2 as const, value })),
          { type: 7 as const, ip: '127.0.0.1' },
          ...names.filter((n) => /^[\d.]+$/.test(n) && n !== '127.0.0.1').map((ip) => ({ type: 7 as const, ip })),
        ],
      },
    ],
  });
  await writeFile(keyFile, pems.private, { mode: 0o600 });
  await chmod(keyFile, 0o600);
  await writeFile(certFile, pems.cert);
  return { cert: pems.cert, key: pems.private, certFile, generated: true };
}
