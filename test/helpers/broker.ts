// A real broker for end-to-end tests: the node of `spindle` (src/node/node.ts) in this process,
// listening on free ports, with a routing core of its own (so tests in one process never share
// state). Configuration overrides are written to a JSON config file, as a user would.
import type { ClusterLink } from '../../src/cluster/index.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';

import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';

import { loadConfig } from '../../src/config/index.ts';
import { createLogger } from '../../src/log/index.ts';
import type { Supervisor, Ports } from '../../src/node/supervisor.ts';
import type { AdminHandle } from '../../src/admin/index.ts';
import { startNode } from '../../src/node/node.ts';
import type { Features } from '../../src/node/features.ts';
import { WAIT_MS } from './wait.ts';

export interface TestBroker {
  ports: Ports;
  supervisor: Supervisor;
  url: string;
  wsUrl: string;
  /** The admin API, when the overrides enable it (`admin: {enabled: true}`). */
  admin: AdminHandle | null;
  /** This node's part of the cluster, when the overrides enable it. */
  cluster: ClusterLink | null;
  /** The main thread's features (rules, policies, scripts, bridges, commands ...), which run
   * with or without the admin API. */
  features: Features;
  stop(): Promise<void>;
}

let counter = 0;

/** The password of the first admin user of test brokers (user "admin"). */
export const ADMIN_PASSWORD = 'test-admin-password';

export async function startBroker(overrides: Record<string, unknown> = {}): Promise<TestBroker> {
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-test-'));
  const file = path.join(dir, 'spindle.json');
  const base = {
    workers: 2,
    dataDir: dir,
    log: { level: process.env.SPINDLE_TEST_LOG ?? 'error' },
    mqtt: { host: '127.0.0.1', tcp: { port: 0 }, ws: { port: 0 } },
    sys: { enabled: false },
    admin: { enabled: false, host: '127.0.0.1', port: 0, password: ADMIN_PASSWORD },
  };
  writeFileSync(file, JSON.stringify(deepMerge(base, overrides)));
  const config = loadConfig({ argv: ['--config', file], env: {} });
  const log = createLogger({ level: config.log.level, name: 'test-broker' });
  const node = await startNode(config, log, { routerName: `test-${process.pid}-${counter++}` });
  const { ports, supervisor, admin, cluster, features } = node;
  return {
    ports,
    supervisor,
    url: `mqtt://127.0.0.1:${ports.tcp}`,
    wsUrl: `ws://127.0.0.1:${ports.ws}/mqtt`,
    admin,
    cluster,
    features,
    stop: () => node.close(),
  };
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] = cur && v && typeof cur === 'object' && typeof v === 'object' && !Array.isArray(v)
      ? deepMerge(cur as Record<string, unknown>, v as Record<string, unknown>)
      : v;
  }
  return out;
}

/** An mqtt.js client connected to the broker (rejects on a refused CONNACK). */
export async function connect(url: string, options: IClientOptions = {}): Promise<MqttClient> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options });
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
    client.once('close', () => reject(new Error('closed before CONNACK')));
  });
  return client;
}

/** Resolves with the next `count` messages the client receives (topic, payload text, packet). */
export function nextMessages(client: MqttClient, count: number, timeoutMs = WAIT_MS): Promise<{ topic: string; payload: string; packet: mqtt.IPublishPacket }[]> {
  return new Promise((resolve, reject) => {
    const got: { topic: string; payload: string; packet: mqtt.IPublishPacket }[] = [];
    const timer = setTimeout(() => {
      client.off('message', onMessage);
      reject(new Error(`got ${got.length} of ${count} messages: ${JSON.stringify(got.map((g) => g.topic))}`));
    }, timeoutMs);
    function onMessage(topic: string, payload: Buffer, packet: mqtt.IPublishPacket) {
      got.push({ topic, payload: payload.toString(), packet });
      if (got.length === count) {
        clearTimeout(timer);
        client.off('message', onMessage);
        resolve(got);
      }
    }
    client.on('message', onMessage);
  });
}

/** Resolves when no message arrives for `ms` (asserting silence), rejects on one. */
export function noMessage(client: MqttClient, ms = 300): Promise<void> {
  return new Promise((resolve, reject) => {
    const onMessage = (topic: string) => {
      clearTimeout(timer);
      reject(new Error(`unexpected message on ${topic}`));
    };
    const timer = setTimeout(() => {
      client.off('message', onMessage);
      resolve();
    }, ms);
    client.once('message', onMessage);
  });
}

export async function end(...clients: MqttClient[]): Promise<void> {
  await Promise.all(clients.map((c) => (c.connected ? c.endAsync() : Promise.resolve(c.end(true)))));
}

export async function closed(client: MqttClient): Promise<void> {
  if (!client.connected && client.disconnected) return;
  await once(client as unknown as NodeJS.EventEmitter, 'close');
}

/** Connections open on the broker now, over all workers (each worker counts a connection from
 * accept to close; a close is counted in the same step that publishes or discards the will). */
export async function connectionCount(broker: TestBroker): Promise<number> {
  return (await broker.supervisor.collectStats()).reduce((n, s) => n + s.connectionsCurrent, 0);
}

/** MQTT 5 options of a client with a persistent session (Clean Start 0, one hour's expiry). */
export const persistent = (clientId: string) => ({ clientId, clean: false, protocolVersion: 5 as const, properties: { sessionExpiryInterval: 3600 } });

/** The reason code of the next DISCONNECT the server sends `client`. */
export function disconnectReason(client: MqttClient): Promise<number | undefined> {
  return new Promise((resolve) => client.once('disconnect', (p) => resolve(p.reasonCode)));
}
