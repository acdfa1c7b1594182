// Counters of one worker thread, read by the supervisor for $SYS and metrics. Plain numbers on
// the hot path; copied into a message once per reporting interval.

export class WorkerStats {
  connectionsCurrent = 0;
  connectionsTotal = 0;
  messagesReceived = 0;
  messagesSent = 0;
  bytesReceived = 0;
  bytesSent = 0;
  publishReceived = [0, 0, 0];
  publishSent = [0, 0, 0];
  /** Messages not delivered, by reason. */
  dropped = {
    expired: 0,
    queueFull: 0,
    tooLarge: 0,
    noSession: 0,
    notAuthorized: 0,
    qos0Offline: 0,
  };
  authFailed = 0;
  aclDenied = 0;
  protocolErrors = 0;
  sessions = 0;
  persistentSessions = 0;

  snapshot(): WorkerStatsSnapshot {
    return JSON.parse(JSON.stringify(this)) as WorkerStatsSnapshot;
  }
}

export type WorkerStatsSnapshot = Omit<WorkerStats, 'snapshot'>;
