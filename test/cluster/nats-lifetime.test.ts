// A node's own nats-server lives as long as the node: killed with it when the node's process is
// killed hard (SIGKILL), and one left over from an earlier run (its pidfile in <dataDir>/nats) is
// stopped when the node starts again, so a restart never finds its NATS port taken.
// needs: broker, nats
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { startProcessBroker, tempDir } from '../helpers/process-broker.ts';
import { freePort } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';
import { findNatsServer, portOpen } from '../../src/cluster/nats-process.ts';

function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('nats-server');
  } catch {
    return false;
  }
}

async function node(dataDir: string, clientPort: number) {
  return startProcessBroker({
    nodeName: 'life-a', dataDir, workers: 1, log: { level: 'info' }, sys: { enabled: false }, admin: { enabled: false },
    mqtt: { host: '127.0.0.1', tcp: { port: await freePort() }, ws: { port: 0 } }, store: { storeType: 'MEMORY' },
    cluster: { enabled: true, clientPort, localAddress: `127.0.0.1:${await freePort()}` },
  });
}

test('a node killed hard takes its nats-server with it, and starts again on the same ports', async () => {
  const dataDir = tempDir();
  const clientPort = await freePort();
  const first = await node(dataDir, clientPort);
  const pidFile = path.join(dataDir, 'nats', 'nats-server.pid');
  await waitFor(() => existsSync(pidFile), { message: 'nats-server wrote its pidfile' });
  const pid = Number(readFileSync(pidFile, 'utf8'));
  assert.ok(alive(pid), 'the node runs its own nats-server');
  await first.kill('SIGKILL');
  await waitFor(() => !alive(pid), { message: 'nats-server exited after its node was killed' });
  const second = await node(dataDir, clientPort);
  assert.ok(await portOpen(clientPort));
  await second.kill('SIGTERM');
});

test('a nats-server left by an earlier run (pidfile in the data directory) is stopped at start', async () => {
  const dataDir = tempDir();
  const clientPort = await freePort();
  const store = path.join(dataDir, 'nats');
  mkdirSync(store, { recursive: true });
  const pidFile = path.join(store, 'nats-server.pid');
  // As a node on a host without setpriv would leave it: started without a parent-death signal.
  const leftover = spawn(findNatsServer(''), ['-a', '127.0.0.1', '-p', String(clientPort), '-P', pidFile, '-js', '-sd', store], { stdio: 'ignore' });
  try {
    await waitFor(() => portOpen(clientPort), { message: 'the leftover nats-server listens' });
    const broker = await node(dataDir, clientPort);
    assert.notEqual(leftover.exitCode ?? leftover.signalCode, null, 'the leftover was stopped');
    assert.ok(broker.output.some((l) => l.includes('an earlier run of this node left')), 'and that was logged');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    assert.notEqual(pid, leftover.pid, 'the pidfile names the new nats-server');
    assert.ok(alive(pid));
    await broker.kill('SIGTERM');
    await waitFor(() => !alive(pid), { message: 'nats-server stopped with its node' });
  } finally {
    leftover.kill('SIGKILL');
  }
});
