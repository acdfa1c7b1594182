// The node's log: the level of the main thread's logger and of every worker (set at run time by
// the admin API; a worker started later starts with it), and the rotating files in
// <dataDir>/logs when log.file.enabled is on: the main thread's lines reach them through a sink on
// its logger, the workers' through their stdout (worker-pool.ts). Owns the log store (main thread).
import path from 'node:path';

import type { BrokerConfig } from '../config/index.ts';
import { addLogSink, setLogLevel, type Logger, type LogLevel } from '../log/index.ts';
import { LogStore } from '../log/log-store.ts';

export class NodeLog {
  private logStore: LogStore | null = null;
  private detach: () => void = () => {};
  private current: LogLevel;

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
