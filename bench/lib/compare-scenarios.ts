// The comparison bench's scenarios (what the load generator runs, which numbers it reports) and
// the issues' targets for each, as ratios of Spindle to Mosquitto, Aedes and rumqttd in the same run.
import type { Mode } from './compare-brokers.ts';

export type Family = 'fanin' | 'fanout100' | 'fanout1000' | 'pairs100' | 'connrate' | 'idle' | 'latency' | 'retained' | 'subs1m';

export interface Metric {
  /** Field of the load generator's JSON. */
  key: string;
  label: string;
  unit: string;
  better: 'higher' | 'lower';
}

export interface Scenario {
  id: string;
  family: Family;
  title: string;
  version: 4 | 5;
  qos?: 0 | 1;
  /** Needs a freshly started broker for every run (memory readings, retained state). */
  fresh: boolean;
  /** Retained messages the scenario stores and then expects in one subscription. */
  retainedTopics?: number;
  loadgenArgs: string[];
  metrics: Metric[];
  timeoutMs: number;
}

export interface Target {
  op: '>=' | '<=';
  value: number;
  text: string;
}

export interface Targets {
  /** On Spindle / Mosquitto. */
  mosquitto?: Target;
  /** On Spindle's advantage over Aedes (Aedes / Spindle for lower-is-better metrics). */
  aedes?: Target;
  /** On Spindle / rumqttd (issue 11: throughput only). */
  rumqttd?: Target;
  /** On Spindle's own value. */
  absolute?: Target;
}

const RATE: Metric = { key: 'rate', label: 'msgs/s', unit: 'msgs/s', better: 'higher' };

export const FAMILY_TITLES: Record<Family, string> = {
  fanin: 'fan-in 10 → 1',
  fanout100: 'fan-out 1 → 100',
  fanout1000: 'fan-out 1 → 1000',
  pairs100: '100 pub/sub pairs',
  connrate: 'connections per second',
  idle: 'memory per idle connection (10 000)',
  latency: 'latency at 10 000 msgs/s',
  retained: '100 000 retained to one # subscriber',
  subs1m: '1 M subscriptions',
};

const THROUGHPUT: Record<'fanin' | 'fanout100' | 'fanout1000' | 'pairs100', string[]> = {
  fanin: ['--topology', 'fanin', '--pubs', '10'],
  fanout100: ['--topology', 'fanout', '--subs', '100'],
  fanout1000: ['--topology', 'fanout', '--subs', '1000'],
  pairs100: ['--topology', 'pairs', '--pubs', '100'],
};

export function versionName(v: 4 | 5): string {
  return v === 4 ? '3.1.1' : '5.0';
}

/** Every scenario; `quick` shortens durations and sizes (the subset is chosen in QUICK_IDS). */
export function scenarios(quick: boolean): Scenario[] {
  const out: Scenario[] = [];
  const d = quick ? ['--warmup', '0.3', '--duration', '1'] : ['--warmup', '1', '--duration', '2'];
  for (const version of [4, 5] as const) {
    const v = ['--version', String(version)];
    for (const family of ['fanin', 'fanout100', 'fanout1000', 'pairs100'] as const) {
      for (const qos of [0, 1] as const) {
        out.push({
          id: `${family}-q${qos}-v${version}`,
          family,
          title: FAMILY_TITLES[family],
          version,
          qos,
          fresh: false,
          loadgenArgs: ['throughput', ...THROUGHPUT[family], '--qos', String(qos), '--window', '4096', ...d, ...v],
          metrics: [{ ...RATE, label: 'deliveries/s' }],
          timeoutMs: 120_000,
        });
      }
    }
    out.push({
      id: `connrate-v${version}`,
      family: 'connrate',
      title: FAMILY_TITLES.connrate,
      version,
      fresh: false,
      loadgenArgs: ['connrate', '--concurrency', '64', '--sources', '16', ...(quick ? ['--warmup', '0.3', '--duration', '1'] : ['--warmup', '0.5', '--duration', '3']), ...v],
      metrics: [{ key: 'rate', label: 'connections/s', unit: 'conn/s', better: 'higher' }],
      timeoutMs: 60_000,
    });
    out.push({
      id: `idle-v${version}`,
      family: 'idle',
      title: FAMILY_TITLES.idle,
      version,
      fresh: true,
      loadgenArgs: ['idle', '--connections', '10000', '--settle', quick ? '1' : '2', ...v],
      metrics: [{ key: 'bytesPerConnection', label: 'bytes/connection', unit: 'B', better: 'lower' }],
      timeoutMs: 180_000,
    });
    for (const qos of [0, 1] as const) {
      out.push({
        id: `latency-q${qos}-v${version}`,
        family: 'latency',
        title: FAMILY_TITLES.latency,
        version,
        qos,
        fresh: false,
        loadgenArgs: ['latency', '--rate', '10000', '--qos', String(qos), ...(quick ? ['--warmup', '0.5', '--duration', '1'] : ['--warmup', '1', '--duration', '3']), ...v],
        metrics: [
          { key: 'p50', label: 'p50 µs', unit: 'µs', better: 'lower' },
          { key: 'p99', label: 'p99 µs', unit: 'µs', better: 'lower' },
        ],
        timeoutMs: 60_000,
      });
    }
    out.push({
      id: `retained-v${version}`,
      family: 'retained',
      title: FAMILY_TITLES.retained,
      version,
      fresh: true,
      retainedTopics: quick ? 20_000 : 100_000,
      loadgenArgs: ['retained', '--topics', quick ? '20000' : '100000', ...v],
      metrics: [{ key: 'rate', label: 'retained msgs/s', unit: 'msgs/s', better: 'higher' }],
      timeoutMs: 300_000,
    });
    out.push({
      id: `subs1m-v${version}`,
      family: 'subs1m',
      title: FAMILY_TITLES.subs1m,
      version,
      fresh: true,
      loadgenArgs: ['subscriptions', '--subscriptions', quick ? '100000' : '1000000', '--subscribers', '100', '--publishers', '10', ...(quick ? ['--warmup', '0.3', '--duration', '1'] : ['--warmup', '1', '--duration', '3']), ...v],
      metrics: [
        { key: 'rate', label: 'publish msgs/s', unit: 'msgs/s', better: 'higher' },
        { key: 'bytesPerSubscription', label: 'bytes/subscription', unit: 'B', better: 'lower' },
        { key: 'subscribeRate', label: 'subscriptions/s', unit: 'subs/s', better: 'higher' },
      ],
      timeoutMs: 600_000,
    });
  }
  return out;
}

/** What `--quick` runs: one of each family, mostly MQTT 3.1.1. */
export const QUICK_IDS = new Set([
  'fanin-q0-v4', 'fanin-q1-v4', 'fanout100-q0-v4', 'fanout1000-q1-v5', 'pairs100-q1-v5',
  'connrate-v4', 'idle-v4', 'latency-q0-v4', 'retained-v4', 'subs1m-v4',
]);

const THROUGHPUT_FAMILIES = new Set<Family>(['fanin', 'fanout100', 'fanout1000', 'pairs100']);

/** The targets for one metric of one scenario in one mode. */
export function targetsFor(s: Scenario, metric: Metric, mode: Mode): Targets {
  const aedes: Target = { op: '>=', value: 5, text: '≥ 5x' };
  if (THROUGHPUT_FAMILIES.has(s.family)) {
    return {
      mosquitto: mode === 'pinned' ? { op: '>=', value: 1, text: '≥ 1.0x' } : { op: '>=', value: 1.5, text: '≥ 1.5x' },
      aedes,
      rumqttd: { op: '>=', value: 1, text: '≥ 1.0x' },
    };
  }
  switch (s.family) {
    case 'connrate':
      return { mosquitto: { op: '>=', value: 1, text: '≥ 1.0x' }, aedes };
    case 'idle':
      return { absolute: { op: '<=', value: 6144, text: '≤ 6 KB' } };
    case 'latency':
      return metric.key === 'p50' ? { mosquitto: { op: '<=', value: 1, text: '≤ 1.0x' } } : {};
    case 'retained':
      return { aedes };
    case 'subs1m':
      return metric.key === 'rate' || metric.key === 'subscribeRate' ? { aedes } : {};
    default:
      return {};
  }
}

export function meets(t: Target | undefined, value: number | undefined): boolean | undefined {
  if (!t || value === undefined || !Number.isFinite(value)) return undefined;
  return t.op === '>=' ? value >= t.value : value <= t.value;
}
