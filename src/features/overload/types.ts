// The overload feature's shapes: the marks (configuration keys overload.*, changed at run time
// through PUT /api/overload/marks) and a worker's measures and state.

/** When a worker refuses new connections, and when it accepts again. A high mark of 0 (heap,
 * RSS) is not watched. */
export interface OverloadMarks {
  enabled: boolean;
  lagHighMs: number;
  lagLowMs: number;
  heapHighMB: number;
  heapLowMB: number;
  rssHighMB: number;
  rssLowMB: number;
  sampleMs: number;
  shedQos0: boolean;
}

export type OverloadState = 'normal' | 'overloaded';

/** What passed its high-water mark. */
export type OverloadReason = 'lag' | 'heap' | 'rss';

/** One worker's overload state and its last measures. */
export interface WorkerOverloadStatus {
  worker: number;
  state: OverloadState;
  /** What passed its high mark when the worker became overloaded (empty when normal). */
  reasons: OverloadReason[];
  /** Since when (ISO time) the worker is in its state. */
  since: string;
  /** The 99th percentile of the event-loop delay over the last sample, ms. */
  lagMs: number;
  /** V8 heap used by the worker, bytes. */
  heapUsedBytes: number;
  /** Resident memory of the process, bytes. */
  rssBytes: number;
  /** CONNECTs refused while overloaded, since the worker started. */
  refused: number;
  /** QoS 0 deliveries to slow clients dropped while overloaded, since the worker started. */
  shed: number;
  /** Times the worker became overloaded, since it started. */
  episodes: number;
}
