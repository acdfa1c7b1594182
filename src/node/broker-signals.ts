// The broker's own values for the control platform's alert rules (main thread): the workers'
// statistics summed, the rule engine's failed action outputs, and the worker threads not running.
// A single node has no other node to be down (the cluster is not built: node.down is 0).
// Overload protection's state and the rate-limit throttles are asked of the workers.
import type { Supervisor } from './supervisor.ts';
import type { RuleManager } from '../rules/manager.ts';

export async function brokerSignals(supervisor: Supervisor, rules: RuleManager): Promise<Record<string, number>> {
  const stats = await supervisor.collectStats();
  let connections = 0, received = 0, sent = 0, dropped = 0, authFailures = 0, aclDenied = 0;
  for (const s of stats) {
    connections += s.connectionsCurrent;
    received += s.messagesReceived;
    sent += s.messagesSent;
    dropped += Object.values(s.dropped).reduce((a, b) => a + b, 0);
    authFailures += s.authFailed;
    aclDenied += s.aclDenied;
  }
  let overloaded = 0, refused = 0;
  for (const w of await supervisor.callAll('overload.status')) {
    if (w.state === 'overloaded') overloaded++;
    refused += w.refused;
  }
  const throttled = (await supervisor.callAll('rateLimits.throttled')).reduce((a, b) => a + b, 0);
  let actionsFailed = 0;
  for (const r of await rules.allRuntimes()) for (const a of r.actions) actionsFailed += a.failed;
  return {
    connections,
    'messages.received': received,
    'messages.sent': sent,
    'messages.dropped': dropped,
    'auth.failures': authFailures,
    'acl.denied': aclDenied,
    'rules.actions.failed': actionsFailed,
    'workers.down': supervisor.workerStates().filter((w) => !w.running).length,
    'node.down': 0,
    'overload.workers': overloaded,
    'overload.refused': refused,
    'rate.throttled': throttled,
  };
}
