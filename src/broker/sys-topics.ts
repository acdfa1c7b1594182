// $SYS topics: broker statistics published periodically as retained messages. Filters that start
// with a wildcard do not match them [MQTT-4.7.2-1]; subscribe to "$SYS/#" to see them.
import type { WorkerStatsSnapshot } from '../stats/worker-stats.ts';

export interface SysInput {
  version: string;
  startedAt: number;
  workers: WorkerStatsSnapshot[];
  subscriptions: number;
  retained: number;
  clientsKnown: number;
}

/** topic -> payload text for one $SYS round. */
export function sysTopics(input: SysInput): Map<string, string> {
  const sum = (f: (s: WorkerStatsSnapshot) => number) => input.workers.reduce((a, s) => a + f(s), 0);
  const t = new Map<string, string>();
  t.set('$SYS/broker/version', `spindle ${input.version}`);
  t.set('$SYS/broker/uptime', `${Math.floor((Date.now() - input.startedAt) / 1000)} seconds`);
  t.set('$SYS/broker/clients/connected', String(sum((s) => s.connectionsCurrent)));
  t.set('$SYS/broker/clients/total', String(input.clientsKnown));
  t.set('$SYS/broker/clients/connections/total', String(sum((s) => s.connectionsTotal)));
  t.set('$SYS/broker/messages/received', String(sum((s) => s.messagesReceived)));
  t.set('$SYS/broker/messages/sent', String(sum((s) => s.messagesSent)));
  t.set('$SYS/broker/bytes/received', String(sum((s) => s.bytesReceived)));
  t.set('$SYS/broker/bytes/sent', String(sum((s) => s.bytesSent)));
  t.set('$SYS/broker/subscriptions/count', String(input.subscriptions));
  t.set('$SYS/broker/retained messages/count', String(input.retained));
  t.set('$SYS/broker/sessions/count', String(sum((s) => s.sessions)));
  return t;
}
