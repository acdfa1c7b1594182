// Choosing the worker thread a test client lands on, instead of trusting how SO_REUSEPORT hashes
// a connection: a test hook that opens a private listener on one worker alone, through the worker
// operation the endpoint registry itself uses (endpoints.open). A client that connects to the URL
// of worker w is served by worker w.
import { reuseportListener, listenerPort } from '../../src/native/index.ts';
import { completeEndpoint } from '../../src/broker/endpoint-config.ts';
import { MAX_ENDPOINT_SLOTS } from '../../src/broker/endpoint-counters.ts';
import type { TestBroker } from './broker.ts';

/** The URL of a listener only worker `w` accepts on, for each running worker (by worker id). */
export async function workerUrls(broker: TestBroker): Promise<string[]> {
  const urls: string[] = [];
  for (const w of broker.supervisor.runningWorkers()) {
    const fd = reuseportListener('127.0.0.1', 0, 128, false);
    const port = listenerPort(fd);
    const config = completeEndpoint({ id: `test-worker-${w}`, port, host: '127.0.0.1' }, { messageMaxSize: 1048576 }, 'api');
    // Slots at the top of the range: the registry takes its slots from the bottom.
    await broker.supervisor.call(w, 'endpoints.open', { config, slot: MAX_ENDPOINT_SLOTS - 1 - w, fd });
    urls[w] = `mqtt://127.0.0.1:${port}`;
  }
  return urls;
}
