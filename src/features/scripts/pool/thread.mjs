// A pool thread's entry (piscina loads it): registers tsx so the TypeScript task handler can be
// loaded, then exports it as piscina expects.
import { register } from 'tsx/esm/api';

register();
const { runBatch } = await import('./run-batch.ts');
export default runBatch;
