// Flapping detection, the main thread's half (EMQX's flapping_detect): the workers count each
// client id's connections in a table they share (flapping-table.ts) and keep the ids that went
// past flapping.maxCount within flapping.window; this polls the table's flag counter (one
// Atomics load every POLL_MS) and, when it moved, takes those ids from the workers and bans
// each for flapping.banTime: a normal ban, by "flapping", so stored, replicated and kicking.
import { Counter, type Registry } from 'prom-client';

import type { Logger } from '../../log/index.ts';
import type { FeatureWorkers } from '../feature.ts';
import type { BanList } from './ban-list.ts';
import { flaggedCount, type FlappingLimits } from './flapping-table.ts';

const POLL_MS = 100;

export interface FlappingSettings extends FlappingLimits {
  banSeconds: number;
}

export class FlappingDetector {
  private readonly timer: NodeJS.Timeout;
  private seen = 0;
  private taking = false;
  private readonly bans: Counter;

  constructor(
    private readonly table: SharedArrayBuffer,
    private readonly settings: FlappingSettings,
    private readonly list: BanList,
    private readonly workers: FeatureWorkers,
    private readonly log: Logger,
    registry: Registry,
  ) {
    this.bans = new Counter({ name: 'spindle_flapping_bans_total', help: 'Client ids banned for flapping (more than flapping.maxCount connections within flapping.window).', registers: [registry] });
    this.timer = setInterval(() => void this.poll(), POLL_MS).unref();
  }

  private async poll(): Promise<void> {
    const n = flaggedCount(this.table);
    if (n === this.seen || this.taking) return;
    this.seen = n;
    this.taking = true;
    try {
      const taken = await this.workers.callAll('flapping.take');
      const ids = [...new Set(taken.flat())];
      for (const clientId of ids) await this.ban(clientId);
    } catch (err) {
      this.log.error('flapping clients could not be taken from the workers', { err });
    } finally {
      this.taking = false;
    }
  }

  private async ban(clientId: string): Promise<void> {
    const { maxCount, windowSeconds, banSeconds } = this.settings;
    const existing = this.list.get('clientid', clientId);
    if (existing && existing.until === null) return; // banned for good already
    try {
      await this.list.add({
        as: 'clientid',
        who: clientId,
        by: 'flapping',
        reason: `connected more than ${maxCount} times within ${windowSeconds} s`,
        until: Math.ceil(Date.now() / 1000) + banSeconds,
      });
      this.bans.inc();
      this.log.warn('client banned for flapping', { clientId, maxCount, windowSeconds, banSeconds });
    } catch (err) {
      this.log.error('flapping client could not be banned', { clientId, err });
    }
  }

  close(): void {
    clearInterval(this.timer);
  }
}
