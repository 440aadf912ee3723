/**
 * Where `blockwire faucet` finds the node the quick start runs: its RPC URL (credentials
 * included, so mode 0600 like the API key beside it) in the data directory.
 * @module
 */
import { existsSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export type QuickStartNode = { rpcUrl: string; kind: 'devnode' | 'bitcoind' };

const FILE = 'quickstart-node.json';

/** The file's path in a data directory. */
export const quickStartNodeFile = (dataDir: string) => join(dataDir, FILE);

/** Records the quick start's node. */
export async function rememberQuickStartNode(dataDir: string, node: QuickStartNode): Promise<void> {
  const file = quickStartNodeFile(dataDir);
  await writeFile(file, `${JSON.stringify(node)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
}

/** The quick start's node recorded in this data directory, if any. */
export async function readQuickStartNode(dataDir: string): Promise<QuickStartNode | undefined> {
  const file = quickStartNodeFile(dataDir);
  return existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as QuickStartNode) : undefined;
}
