// Shared by the handler unit tests: an engine per test and connected FakeClients.
import { afterEach } from 'node:test';

import { startEngine, type Engine, type FakeClient } from '../../helpers/engine.ts';
import type { BrokerConfig } from '../../../src/config/index.ts';

let current: Engine | null = null;
afterEach(() => {
  current?.close();
  current = null;
});

export function engine(options: { workers?: number; config?: BrokerConfig } = {}): Engine {
  current?.close();
  current = startEngine(options);
  return current;
}

/** A client that sent CONNECT (v5 unless `protocolVersion` says otherwise) and got CONNACK. */
export async function connected(e: Engine, clientId: string, extra: Record<string, unknown> = {}, worker = 0): Promise<FakeClient> {
  const c = e.client(worker);
  await c.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId, clean: true, keepalive: 60, ...extra });
  return c;
}

/** The reason code of a received packet (absent: success, in v5's short forms). */
export function reasonOf(p: { reasonCode?: number } | object | undefined): number | undefined {
  return (p as { reasonCode?: number } | undefined)?.reasonCode;
}
