// The `spindle` command: loads the configuration, starts the node (node/node.ts), and handles
// signals (SIGTERM/SIGINT: graceful shutdown; SIGHUP: reload TLS certificates, PSK files, the
// admin API's certificate and the Mosquitto password and ACL files).
import uWS from 'uWebSockets.js';

import { loadConfig, ConfigError } from './config/index.ts';
import { createLogger } from './log/index.ts';
import { dropWarmWorkers, prewarmWorkers } from './node/worker-prewarm.ts';
import type { NodeHandle } from './node/node.ts';

function checkUws(): void {
  // If its binary fails to load, the package falls back to a slow shim without SSLApp.
  if (typeof (uWS as { SSLApp?: unknown }).SSLApp !== 'function') {
    throw new Error('uWebSockets.js native binary did not load (no SSLApp): refusing to run on the fallback');
  }
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig({ argv: process.argv.slice(2), env: process.env });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`spindle: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger({ level: config.log.level, name: 'main' });
  // A driver's promise nobody awaits (a bug, ours or a library's) must not end every client's
  // connection: it is logged with its stack, and the broker goes on.
  process.on('unhandledRejection', (err) => log.error('unhandled promise rejection (a bug): logged, the broker goes on', { err }));
  checkUws();
  // Signals are taken from the start: a SIGTERM while the node starts (MQTT may already accept)
  // stops it gracefully once it has started, rather than killing it halfway.
  let node: NodeHandle | null = null;
  let stopping: string | null = null;
  const shutdown = (started: NodeHandle, signal: string) => {
    log.info('shutting down', { signal });
    started.close().then(() => {
      log.info('stopped');
      process.exit(0);
    }, (err) => {
      log.error('shutdown failed', { err });
      process.exit(1);
    });
  };
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = signal;
    if (node) shutdown(node, signal);
    else log.info('stopping once started', { signal });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => {
    node?.supervisor.reloadTls();
    node?.supervisor.reloadAuth();
    void node?.admin?.reloadTls();
  });
  // The workers load their modules while this thread loads the node's and opens the store.
  // Their output comes through this thread when the log store or the OTLP log export takes it.
  prewarmWorkers(config.workers, { youngGenerationMb: config.workerYoungGeneration, stdout: config.log.file.enabled || config.otel.logs.enabled });
  const { startNode } = await import('./node/node.ts');
  node = await startNode(config, log);
  void dropWarmWorkers();
  const { ports, admin } = node;
  log.info('spindle started', { workers: config.workers, ...ports, admin: admin?.port, node: config.nodeName });
  if (stopping) shutdown(node, stopping);
}

main().catch((err) => {
  process.stderr.write(`spindle: failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
