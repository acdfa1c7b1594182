// Worker thread entry: registers tsx so the worker can run TypeScript, then loads the module
// named in workerData.entry (a file URL). Node 20 does not carry the parent's loader hooks
// into worker threads reliably, so every TypeScript worker starts here.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
