// Overload: overload protection's main-thread half. Owns the marks in force on this node (the
// configuration's overload.*, then those stored by PUT /api/overload/marks, kept in the store and
// replicated to the cluster's nodes), sends them to every worker, and reads the workers' states
// for the admin API, the console and the metrics.
import type { FeatureContext } from '../feature.ts';
import { DomainError } from '../../errors/domain-error.ts';
import { changedMarks, checkMarks, configMarks } from './marks.ts';
import type { OverloadMarks, WorkerOverloadStatus } from './types.ts';

/** The stored kind and the one id of the marks. */
export const OVERLOAD_KIND = 'overload';
const MARKS_ID = 'marks';

export interface OverloadStatus {
  /** overloaded when any worker is. */
  state: 'normal' | 'overloaded';
  marks: OverloadMarks;
  /** Where the marks in force come from: the configuration file, or PUT /api/overload/marks. */
  source: 'config' | 'api';
  workers: WorkerOverloadStatus[];
}

type Host = Pick<FeatureContext, 'config' | 'store' | 'log' | 'workers' | 'setWorkerState'>;

export class Overload {
  private marks: OverloadMarks;
  private source: 'config' | 'api' = 'config';

  constructor(private readonly host: Host) {
    this.marks = configMarks(host.config);
  }

  /** The stored marks, when PUT /api/overload/marks set some, over the configuration's. */
  async load(): Promise<void> {
    const stored = await this.host.store.getAdmin<OverloadMarks>(OVERLOAD_KIND, MARKS_ID);
    if (stored) this.use(stored, 'api');
  }

  current(): OverloadMarks {
    return { ...this.marks };
  }

  /** Changes the fields given (400 naming a bad one); stored, replicated, on every worker now. */
  async setMarks(change: Partial<OverloadMarks>): Promise<OverloadMarks> {
    const next = changedMarks(this.marks, change);
    await this.host.store.putAdmin(OVERLOAD_KIND, MARKS_ID, next);
    this.use(next, 'api');
    this.host.log.info('overload marks changed', { ...next });
    return this.current();
  }

  /** The marks changed on another node (null: removed there, back to the configuration's). */
  applyStored(id: string, doc: unknown): void {
    if (id !== MARKS_ID) return;
    if (doc === null) {
      this.use(configMarks(this.host.config), 'config');
      return;
    }
    const marks = { ...configMarks(this.host.config), ...(doc as Partial<OverloadMarks>) };
    checkMarks(marks);
    this.use(marks, 'api');
  }

  private use(marks: OverloadMarks, source: 'config' | 'api'): void {
    this.marks = marks;
    this.source = source;
    this.host.setWorkerState('overload', marks);
  }

  async status(): Promise<OverloadStatus> {
    const workers = await this.host.workers.callAll('overload.status');
    return { state: workers.some((w) => w.state === 'overloaded') ? 'overloaded' : 'normal', marks: this.current(), source: this.source, workers };
  }

  /** Testing only: makes workers lag (overload.debugBusy; 403 when off). */
  async busy(worker: number | undefined, totalMs: number, blockMs: number): Promise<number[]> {
    if (!this.host.config.overload.debugBusy) throw new DomainError('FORBIDDEN', 'overload.debugBusy is off: this switch is for tests only', { field: 'overload.debugBusy' });
    const targets = worker === undefined ? this.host.workers.running() : [worker];
    for (const w of targets) {
      if (!this.host.workers.running().includes(w)) throw new DomainError('NOT_FOUND', `no worker ${w} runs`, { field: 'worker' });
      await this.host.workers.call(w, 'overload.busy', { totalMs, blockMs });
    }
    return targets;
  }
}
