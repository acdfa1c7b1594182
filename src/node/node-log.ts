// The node's log: the level of the main thread's logger and of every worker (set at run time by
// the admin API; a worker started later starts with it), and the rotating files in
// <dataDir>/logs when log.file.enabled is on: the main thread's lines reach them through a sink on
// its logger, the workers' through their stdout (worker-pool.ts). Other sinks of every line (the
// OpenTelemetry log export) are added the same way. Owns the log store and the sinks (main thread).
import path from 'node:path';

import type { BrokerConfig } from '../config/index.ts';
import { addLogSink, setLogLevel, type LogLineSink, type Logger, type LogLevel } from '../log/index.ts';
import { LogStore } from '../log/log-store.ts';

export class NodeLog {
  private logStore: LogStore | null = null;
  private detach: () => void = () => {};
  private current: LogLevel;
  /** Sinks of every line of the node (replaced, never mutated, when one comes or goes). */
  private sinks: readonly LogLineSink[] = [];

  /** `tellWorkers` sets the level on every running worker. */
  constructor(private readonly config: BrokerConfig, private readonly log: Logger, private readonly tellWorkers: (level: LogLevel) => Promise<unknown>) {
    this.current = config.log.level;
  }

  /** Opens the log store, and the sink that puts the main thread's lines into it. */
  open(): void {
    const f = this.config.log.file;
    if (!f.enabled) return;
    const store = new LogStore({ dir: path.resolve(this.config.dataDir, 'logs'), maxSize: f.maxSize, maxFiles: f.maxFiles });
    store.open();
    this.logStore = store;
    this.detach = addLogSink(this.log, (line) => store.append(line));
  }

  close(): void {
    this.detach();
    this.logStore?.close();
  }

  /** Adds a sink for every line of the node: the main thread's now, a worker's once it starts
   * with its output relayed (workerLines). Answers the function that removes it. */
  addLineSink(sink: LogLineSink): () => void {
    this.sinks = [...this.sinks, sink];
    const detach = addLogSink(this.log, (line) => sink(line.endsWith('\n') ? line.slice(0, -1) : line, 'main'));
    return () => {
      detach();
      this.sinks = this.sinks.filter((s) => s !== sink);
    };
  }

  /** Where a worker's output lines go when something takes them (the log store, a sink), else
   * null: the worker writes to the process's stdout itself. */
  workerLines(): ((line: string, worker: number) => void) | null {
    if (this.logStore === null && this.sinks.length === 0) return null;
    return (line, worker) => {
      const thread = `worker-${worker}`;
      this.logStore?.append(line, thread);
      for (const sink of this.sinks) sink(line, thread);
    };
  }

  /** The log store (null when log.file.enabled is off). */
  get store(): LogStore | null {
    return this.logStore;
  }

  get level(): LogLevel {
    return this.current;
  }

  /** Changes the level of the main thread's logger and of every worker (and of workers started
   * later). */
  async setLevel(level: LogLevel): Promise<void> {
    this.current = level;
    setLogLevel(this.log, level);
    await this.tellWorkers(level);
  }
}
