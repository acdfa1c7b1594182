// The `spindle` command: loads the configuration, starts the supervisor and its workers, and
// handles signals (SIGTERM/SIGINT: graceful shutdown; SIGHUP: reload TLS certificates and the
// Mosquitto password and ACL files).
import uWS from 'uWebSockets.js';

import { loadConfig, ConfigError } from './config/index.ts';
import { createLogger } from './log/index.ts';
import { Supervisor } from './broker/supervisor.ts';
import { startAdmin, type AdminHandle } from './admin/index.ts';
import { BridgeManager } from './bridges/manager.ts';
import { createCluster } from './cluster/index.ts';

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
  const supervisor = new Supervisor(config, log);
  const cluster = createCluster(supervisor, config, log);
  const ports = await supervisor.start();
  if (cluster) {
    try {
      await cluster.start();
    } catch (err) {
      await supervisor.shutdown();
      throw err;
    }
  }
  let admin: AdminHandle | null = null;
  if (config.admin.enabled) {
    try {
      admin = await startAdmin(supervisor, config, log, cluster);
    } catch (err) {
      await supervisor.shutdown();
      throw err;
    }
  }
  // With the admin API the bridges start with it (the file's and the stored ones); without it
  // the file's bridges still run.
  let bridges: BridgeManager | null = null;
  if (!admin && config.bridges.length > 0) {
    bridges = new BridgeManager(supervisor, null, log, config.nodeName);
    if (cluster) bridges.useLeases(cluster.leases);
    await bridges.load(config.bridges);
  }
  log.info('spindle started', { workers: config.workers, ...ports, admin: admin?.port, node: config.nodeName });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    Promise.resolve(admin?.close()).then(() => bridges?.close()).then(() => cluster?.close()).then(() => supervisor.shutdown()).then(() => {
      log.info('stopped');
      process.exit(0);
    }, (err) => {
      log.error('shutdown failed', { err });
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => {
    supervisor.reloadTls();
    supervisor.reloadAuth();
  });
}

main().catch((err) => {
  process.stderr.write(`spindle: failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
