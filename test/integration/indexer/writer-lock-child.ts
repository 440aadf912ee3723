/**
 * A process that takes the writer lock (DATABASE_URL), prints `locked` and holds it until killed:
 * the stopped holder of writer-lock.test.ts.
 */
import { createWriterLock } from '../../../indexer/writer-lock.js';
import { silentLogger } from '../../../src/log.js';

const lock = createWriterLock({ databaseUrl: process.env.DATABASE_URL!, log: silentLogger() });
await lock.acquire();
process.stdout.write('locked\n');
setInterval(() => undefined, 60_000);
