// Topic prefix mapping of a bridge (main thread), as Mosquitto's bridge `topic` lines: a mapping's
// local side is `localPrefix + filter`, its remote side `remotePrefix + filter`; a topic crossing
// the bridge loses the prefix of the side it leaves and gains the other's.
import { matchLevels, parseFilter, topicNameProblem, type FilterLevel } from '../auth/topic-filter.ts';
import type { TopicMapping } from './bridge-config.ts';

export interface Mapped {
  topic: string;
  /** The QoS bound of the mapping that took the message. */
  qos: 0 | 1 | 2;
}

/** Why a mapped topic may not be used (null: it may). */
export type MapFailure = 'unmapped' | 'topic';

export class TopicMap {
  private readonly local: string[];
  private readonly remote: string[];
  /** The same, parsed once (every message crossing is matched against them). */
  private readonly localLevels: FilterLevel[][];
  private readonly remoteLevels: FilterLevel[][];

  constructor(private readonly mappings: readonly TopicMapping[]) {
    this.local = mappings.map((m) => m.localPrefix + m.filter);
    this.remote = mappings.map((m) => m.remotePrefix + m.filter);
    this.localLevels = this.local.map(parseFilter);
    this.remoteLevels = this.remote.map(parseFilter);
  }

  /** The local filters (subscribed in the routing core for forwards). */
  localFilters(): string[] {
    return [...new Set(this.local)];
  }

  /** The remote filters with their QoS (subscribed on the remote for subscriptions). */
  remoteFilters(): { filter: string; qos: 0 | 1 | 2 }[] {
    const out = new Map<string, 0 | 1 | 2>();
    this.mappings.forEach((m, i) => out.set(this.remote[i], Math.max(out.get(this.remote[i]) ?? 0, m.qos) as 0 | 1 | 2));
    return [...out].map(([filter, qos]) => ({ filter, qos }));
  }

  /** A local topic as the remote one (the first mapping whose local side matches it). */
  toRemote(topic: string): Mapped | MapFailure {
    const levels = topic.split('/');
    for (let i = 0; i < this.mappings.length; i++) {
      if (!matchLevels(this.localLevels[i], levels)) continue;
      const m = this.mappings[i];
      return swap(topic, m.localPrefix, m.remotePrefix, m.qos, false);
    }
    return 'unmapped';
  }

  /** A remote topic as the local one (the first mapping whose remote side matches it). */
  toLocal(topic: string): Mapped | MapFailure {
    const levels = topic.split('/');
    for (let i = 0; i < this.mappings.length; i++) {
      if (!matchLevels(this.remoteLevels[i], levels)) continue;
      const m = this.mappings[i];
      return swap(topic, m.remotePrefix, m.localPrefix, m.qos, true);
    }
    return 'unmapped';
  }
}

/** `topic` with the prefix `from` replaced by `to`; a topic that does not carry the prefix (a
 * filter `a/#` also matches `a`), maps to an invalid name, or enters the broker's own `$` topics
 * locally is refused. */
function swap(topic: string, from: string, to: string, qos: 0 | 1 | 2, intoBroker: boolean): Mapped | MapFailure {
  if (!topic.startsWith(from)) return 'topic';
  const out = to + topic.slice(from.length);
  if (topicNameProblem(out) !== undefined) return 'topic';
  if (intoBroker && out.startsWith('$')) return 'topic';
  return { topic: out, qos };
}
