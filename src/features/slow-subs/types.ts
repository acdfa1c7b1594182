// Slow subscribers' shared types: the settings, what every worker holds, and the records.

export const STATS_TYPES = ['whole', 'internal', 'response'] as const;
/** What a latency measures (EMQX's stats_type): whole, from the broker receiving the message to
 * the subscriber's acknowledgement; internal, from receiving to sending it (the time it queued);
 * response, from sending it to the acknowledgement (the subscriber and the network). */
export type StatsType = (typeof STATS_TYPES)[number];

/** Longest top list (slowSubs.topK). */
export const MAX_TOP_K = 1000;
/** Longest window, seconds (slowSubs.window). */
export const MAX_WINDOW = 86_400;

export interface SlowSubsSettings {
  enable: boolean;
  /** Latencies below it (ms) are not recorded. */
  threshold: number;
  /** Records kept (per worker, and in the merged list). */
  topK: number;
  /** Seconds a record stays without a new latency above the threshold. */
  window: number;
  statsType: StatsType;
}

/** WorkerStates.slowSubs. */
export type SlowSubsWorkerState = SlowSubsSettings;

/** One subscriber's slowest recent delivery on a topic. */
export interface SlowSubRecord {
  clientId: string;
  topic: string;
  /** ms, the largest within the window. */
  latency: number;
  /** Epoch ms of the last latency above the threshold. */
  lastUpdate: number;
}

/** What a worker answers ('slowSubs.read'). */
export interface WorkerSlowSubs {
  records: SlowSubRecord[];
  /** Latencies at or above the threshold, since start. */
  recorded: number;
  /** Records pushed out of a full top list by a slower one. */
  evicted: number;
}
