// Turns the comparison bench's runs into its files: compare.json (every run), compare.md (medians,
// spreads, ratios against the issue's targets), SVG charts, and the summary table between the
// bench:compare markers of docs/development/benchmarks.md.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { BROKER_NAMES, notRun, type BrokerName, type Mode } from './compare-brokers.ts';
import { FAMILY_TITLES, meets, targetsFor, versionName, type Family, type Metric, type Scenario, type Target } from './compare-scenarios.ts';
import { barChart, formatNumber, type BarGroup } from './svg-chart.ts';

export interface RunRecord {
  ok: boolean;
  values: Record<string, number>;
  disturbed: boolean;
  foreignCores: number;
  stealCores: number;
  brokerCores: number;
  /** Load generator CPU over the measured window, in cores (1.0: its core was busy all along). */
  loadgenCpu: number;
  loadgenBound: boolean;
  wall: number;
  attempts?: number;
  failure?: string;
  raw: unknown;
}

type ScenarioInfo = Pick<Scenario, 'id' | 'family' | 'title' | 'version' | 'qos' | 'metrics' | 'loadgenArgs'>;

export interface CompareResults {
  name: 'compare';
  machine: Record<string, string | number>;
  brokers: Record<BrokerName, string>;
  options: Record<string, unknown>;
  scenarios: ScenarioInfo[];
  runs: ({ scenario: string; broker: BrokerName; mode: Mode } & RunRecord)[];
  seconds?: number;
  summary?: Summary[];
}

export interface Stat {
  median: number;
  min: number;
  max: number;
  spread: number;
  runs: number;
  failed: number;
  disturbed: number;
  loadgenCpu: number;
  brokerCores: number;
}

export interface Summary {
  scenario: string;
  mode: Mode;
  metric: string;
  spindle?: Stat;
  mosquitto?: Stat;
  aedes?: Stat;
  rumqttd?: Stat;
  mochi?: Stat;
  /** The same Spindle on Node's net sockets (mqtt.io node). */
  spindleNode?: Stat;
  /** Spindle / Mosquitto. */
  ratioMosquitto?: number;
  /** Spindle's advantage over Aedes: Spindle / Aedes, or Aedes / Spindle when lower is better. */
  factorAedes?: number;
  /** Spindle / rumqttd. */
  ratioRumqttd?: number;
  /** Spindle / Mochi (no target: a peer to read the others against). */
  ratioMochi?: number;
  targets: { mosquitto?: Target; aedes?: Target; rumqttd?: Target; absolute?: Target };
  met: { mosquitto?: boolean; aedes?: boolean; rumqttd?: boolean; absolute?: boolean };
}

const BROKERS: BrokerName[] = BROKER_NAMES;
const MODES: Mode[] = ['pinned', 'unpinned'];
const COLORS: Record<BrokerName, string> = { spindle: '#2b6cb0', mosquitto: '#38a169', aedes: '#dd6b20', rumqttd: '#805ad5', mochi: '#d53f8c', 'spindle-node': '#90cdf4' };
const LABELS: Record<BrokerName, string> = { spindle: 'Spindle', mosquitto: 'Mosquitto', aedes: 'Aedes', rumqttd: 'rumqttd', mochi: 'Mochi', 'spindle-node': 'Spindle (mqtt.io node)' };
const THROUGHPUT: Family[] = ['fanin', 'fanout100', 'fanout1000', 'pairs100'];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function stat(runs: RunRecord[], key: string): Stat | undefined {
  if (!runs.length) return undefined;
  const good = runs.filter((r) => r.ok && Number.isFinite(r.values[key]));
  const xs = good.map((r) => r.values[key]);
  const m = median(xs);
  return {
    median: m,
    min: xs.length ? Math.min(...xs) : NaN,
    max: xs.length ? Math.max(...xs) : NaN,
    spread: xs.length > 1 && m ? (Math.max(...xs) - Math.min(...xs)) / m : 0,
    runs: good.length,
    failed: runs.length - good.length,
    disturbed: runs.filter((r) => r.disturbed).length,
    loadgenCpu: median(runs.map((r) => r.loadgenCpu).filter(Number.isFinite)),
    brokerCores: median(runs.map((r) => r.brokerCores).filter(Number.isFinite)),
  };
}

export function summarise(results: CompareResults): Summary[] {
  const out: Summary[] = [];
  for (const s of results.scenarios) {
    for (const mode of MODES) {
      const runsOf = (b: BrokerName) => results.runs.filter((r) => r.scenario === s.id && r.mode === mode && r.broker === b);
      if (!BROKERS.some((b) => runsOf(b).length)) continue;
      for (const metric of s.metrics) {
        const [spindle, mosquitto, aedes, rumqttd, mochi, spindleNode] = BROKERS.map((b) => stat(runsOf(b), metric.key));
        const ok = (x?: Stat) => (x && x.runs > 0 ? x.median : undefined);
        const sv = ok(spindle);
        const mv = ok(mosquitto);
        const av = ok(aedes);
        const rv = ok(rumqttd);
        const cv = ok(mochi);
        const ratioMosquitto = sv !== undefined && mv ? sv / mv : undefined;
        const factorAedes = sv !== undefined && av ? (metric.better === 'higher' ? sv / av : av / sv) : undefined;
        const ratioRumqttd = sv !== undefined && rv ? sv / rv : undefined;
        const ratioMochi = sv !== undefined && cv ? sv / cv : undefined;
        const targets = targetsFor(s as Scenario, metric, mode);
        out.push({
          scenario: s.id,
          mode,
          metric: metric.key,
          spindle,
          mosquitto,
          aedes,
          rumqttd,
          mochi,
          spindleNode,
          ratioMosquitto,
          factorAedes,
          ratioRumqttd,
          ratioMochi,
          targets,
          met: {
            mosquitto: meets(targets.mosquitto, ratioMosquitto),
            aedes: meets(targets.aedes, factorAedes),
            rumqttd: meets(targets.rumqttd, ratioRumqttd),
            absolute: meets(targets.absolute, sv),
          },
        });
      }
    }
  }
  return out;
}

function cell(x: Stat | undefined, s: ScenarioInfo, broker: BrokerName): string {
  if (!x) return notRun(broker, s) ?? '';
  if (!x.runs) return `failed (${x.failed})`;
  const spread = x.spread ? ` ±${Math.round((x.spread * 100) / 2)}%` : '';
  return `${formatNumber(x.median)}${spread}${x.failed ? ` (${x.failed} failed)` : ''}`;
}

const ratio = (v: number | undefined) => (v === undefined ? '' : `${v.toFixed(2)}x`);
const verdict = (m: boolean | undefined) => (m === undefined ? '' : m ? 'met' : '**not met**');

function metricOf(s: ScenarioInfo, key: string): Metric {
  return s.metrics.find((m) => m.key === key)!;
}

function throughputTable(results: CompareResults, sums: Summary[], mode: Mode): string[] {
  const rows = sums.filter((x) => x.mode === mode && THROUGHPUT.includes(scenarioOf(results, x.scenario).family));
  if (!rows.length) return [];
  const lines = [
    `| scenario | MQTT | QoS | Spindle | Mosquitto | Aedes | rumqttd | Mochi | Spindle/Mosquitto | target | | Spindle/Aedes | target | | Spindle/rumqttd | target | | Spindle/Mochi |`,
    `| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- | --- | ---: | --- | --- | ---: |`,
  ];
  for (const x of rows) {
    const s = scenarioOf(results, x.scenario);
    lines.push(
      `| ${s.title} | ${versionName(s.version)} | ${s.qos} | ${cell(x.spindle, s, 'spindle')} | ${cell(x.mosquitto, s, 'mosquitto')} | ${cell(x.aedes, s, 'aedes')} | ${cell(x.rumqttd, s, 'rumqttd')} | ${cell(x.mochi, s, 'mochi')} | ` +
        `${ratio(x.ratioMosquitto)} | ${x.targets.mosquitto?.text ?? ''} | ${verdict(x.met.mosquitto)} | ${ratio(x.factorAedes)} | ${x.factorAedes !== undefined ? x.targets.aedes?.text ?? '' : ''} | ${x.factorAedes !== undefined ? verdict(x.met.aedes) : ''} | ` +
        `${ratio(x.ratioRumqttd)} | ${x.ratioRumqttd !== undefined ? x.targets.rumqttd?.text ?? '' : ''} | ${verdict(x.met.rumqttd)} | ${ratio(x.ratioMochi)} |`,
    );
  }
  return lines;
}

function otherTable(results: CompareResults, sums: Summary[]): string[] {
  const rows = sums.filter((x) => !THROUGHPUT.includes(scenarioOf(results, x.scenario).family));
  if (!rows.length) return [];
  const lines = [
    `| scenario | MQTT | mode | measure | Spindle | Mosquitto | Aedes | rumqttd | Mochi | Spindle/Mosquitto | target | | vs Aedes | target | | Spindle/rumqttd | Spindle/Mochi |`,
    `| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- | --- | ---: | ---: |`,
  ];
  for (const x of rows) {
    const s = scenarioOf(results, x.scenario);
    const m = metricOf(s, x.metric);
    const title = s.qos === undefined ? s.title : `${s.title}, QoS ${s.qos}`;
    const mosquittoTarget = x.targets.mosquitto?.text ?? x.targets.absolute?.text ?? '';
    const mosquittoMet = x.targets.mosquitto ? verdict(x.met.mosquitto) : verdict(x.met.absolute);
    lines.push(
      `| ${title} | ${versionName(s.version)} | ${x.mode} | ${m.label} | ${cell(x.spindle, s, 'spindle')} | ${cell(x.mosquitto, s, 'mosquitto')} | ${cell(x.aedes, s, 'aedes')} | ${cell(x.rumqttd, s, 'rumqttd')} | ${cell(x.mochi, s, 'mochi')} | ` +
        `${ratio(x.ratioMosquitto)} | ${mosquittoTarget} | ${mosquittoMet} | ${ratio(x.factorAedes)} | ${x.factorAedes !== undefined ? x.targets.aedes?.text ?? '' : ''} | ${x.factorAedes !== undefined ? verdict(x.met.aedes) : ''} | ${ratio(x.ratioRumqttd)} | ${ratio(x.ratioMochi)} |`,
    );
  }
  return lines;
}

/** Spindle's two I/O paths side by side (when spindle-node ran). */
function ioTable(results: CompareResults, sums: Summary[]): string[] {
  const rows = sums.filter((x) => x.spindleNode?.runs && x.spindle?.runs);
  if (!rows.length) return [];
  const lines = [
    `| scenario | MQTT | mode | measure | native I/O (mqtt.io native) | Node's net (mqtt.io node) | native / node |`,
    `| --- | --- | --- | --- | ---: | ---: | ---: |`,
  ];
  for (const x of rows) {
    const s = scenarioOf(results, x.scenario);
    const m = metricOf(s, x.metric);
    const title = s.qos === undefined ? s.title : `${s.title}, QoS ${s.qos}`;
    lines.push(`| ${title} | ${versionName(s.version)} | ${x.mode} | ${m.label} | ${cell(x.spindle, s, 'spindle')} | ${cell(x.spindleNode, s, 'spindle-node')} | ${ratio(x.spindle!.median / x.spindleNode!.median)} |`);
  }
  return lines;
}

function scenarioOf(results: CompareResults, id: string): ScenarioInfo {
  return results.scenarios.find((s) => s.id === id)!;
}

interface Chart {
  file: string;
  title: string;
  svg: string;
}

function statOf(x: Summary, b: BrokerName): Stat | undefined {
  return b === 'spindle-node' ? x.spindleNode : x[b];
}

function charts(results: CompareResults, sums: Summary[]): Chart[] {
  const out: Chart[] = [];
  // The brokers this run measured (a run of some brokers draws no bars for the others).
  const measured = BROKERS.filter((b) => results.runs.some((r) => r.broker === b));
  const series = measured.map((b) => ({ name: LABELS[b], color: COLORS[b] }));
  const group = (x: Summary, label: string): BarGroup => {
    const s = scenarioOf(results, x.scenario);
    return {
      label,
      values: measured.map((b) => statOf(x, b)?.runs ? statOf(x, b)!.median : null),
      missing: measured.map((b) => notRun(b, s)?.replace('no 5.0', 'no MQTT 5.0') ?? (statOf(x, b) ? 'failed' : 'not run')),
    };
  };
  for (const mode of MODES) {
    const rows = sums.filter((x) => x.mode === mode && THROUGHPUT.includes(scenarioOf(results, x.scenario).family));
    if (!rows.length) continue;
    const groups = rows.map((x) => {
      const s = scenarioOf(results, x.scenario);
      return group(x, `${s.title}, QoS ${s.qos}, ${versionName(s.version)}`);
    });
    const title = `Throughput, ${mode === 'pinned' ? 'pinned (broker on one core, Spindle 1 worker)' : 'unpinned (Spindle with its default workers)'}`;
    out.push({ file: `throughput-${mode}.svg`, title, svg: barChart({ title, unit: 'deliveries per second (higher is better)', series, groups }) });
  }
  const families = [...new Set(results.scenarios.map((s) => s.family))].filter((f) => !THROUGHPUT.includes(f));
  for (const family of families) {
    const infos = results.scenarios.filter((s) => s.family === family);
    for (const metric of infos[0].metrics) {
      const rows = sums.filter((x) => x.metric === metric.key && scenarioOf(results, x.scenario).family === family);
      if (!rows.length) continue;
      const groups = rows.map((x) => {
        const s = scenarioOf(results, x.scenario);
        return group(x, `${x.mode}, ${versionName(s.version)}${s.qos === undefined ? '' : `, QoS ${s.qos}`}`);
      });
      const title = `${FAMILY_TITLES[family]}: ${metric.label}`;
      out.push({ file: `${family}-${metric.key}.svg`, title, svg: barChart({ title, unit: `${metric.unit} (${metric.better} is better)`, series, groups }) });
    }
  }
  return out;
}

function targetTally(sums: Summary[]): { met: number; total: number; unmet: string[] } {
  let met = 0;
  let total = 0;
  const unmet: string[] = [];
  for (const x of sums) {
    for (const [k, v] of Object.entries(x.met) as [keyof Summary['met'], boolean | undefined][]) {
      if (v === undefined) continue;
      total++;
      if (v) met++;
      else unmet.push(`${x.scenario} ${x.mode} ${x.metric} vs ${k === 'absolute' ? 'its limit' : k}`);
    }
  }
  return { met, total, unmet };
}

function markdown(results: CompareResults, sums: Summary[], chartList: Chart[], chartDir: string): string {
  const m = results.machine;
  const tally = targetTally(sums);
  const loadgen = results.runs.map((r) => r.loadgenCpu).filter(Number.isFinite);
  const bound = results.runs.filter((r) => r.loadgenBound).length;
  const disturbed = results.runs.filter((r) => r.disturbed).length;
  const runsPer = results.options.runs as number;
  const lines = [
    `### Spindle against Mosquitto, Aedes, rumqttd and Mochi`,
    '',
    `Targets met: **${tally.met} of ${tally.total}**.${results.options.quick ? ' (Quick run: one run per scenario, short durations, a subset.)' : ''}`,
    '',
  ];
  for (const mode of MODES) {
    const t = throughputTable(results, sums, mode);
    if (!t.length) continue;
    lines.push(
      `#### Throughput, ${mode === 'pinned' ? 'pinned: broker on core 0, load generator on core 1, Spindle with 1 worker' : 'unpinned: Spindle with its default workers (one per CPU)'}`,
      '',
      ...t,
      '',
    );
  }
  const o = otherTable(results, sums);
  if (o.length) lines.push('#### Connections, memory, latency, retained messages, subscriptions', '', ...o, '');
  const io = ioTable(results, sums);
  if (io.length) lines.push("#### Spindle's I/O: the native driver against Node's net sockets (same build, same run)", '', ...io, '');
  lines.push(
    `- Values are the median of ${runsPer} run${runsPer === 1 ? '' : 's'} (more when they spread over 25 %); ±x% is half the spread (max - min) / median. A run with loss or errors is a failed run and is not in the median.`,
    `- Throughput is deliveries per second in a closed loop: at most 4096 deliveries outstanding (4 messages for fan-out to 1000), QoS 1 publishers also bounded by the broker's Receive Maximum; 64-byte payloads; 1 s warm-up, then the measured window, then a drain that checks every message arrived.`,
    `- "vs Aedes" is how many times better Spindle is (Spindle / Aedes for rates, Aedes / Spindle for memory and latency). Aedes speaks MQTT 3.1.1 only. The 5x Aedes target is applied to every rate; memory and latency have their own targets.`,
    `- Spindle/Mosquitto, Spindle/rumqttd and Spindle/Mochi are plain ratios (above 1 is better for rates, below 1 for memory and latency). rumqttd's target (issue 11) is at least 1.0x on every throughput row, pinned and unpinned; Mochi has no target.`,
    `- Memory per idle connection: RSS growth of a freshly started broker (from /proc/<pid>/status) holding 10 000 idle connections, from the moment its RSS holds still after the start (three readings 0.5 s apart within 1 MiB, 30 s at most: a garbage-collected broker gives back what its start allocated some seconds later). 1 M subscriptions: 100 clients with 10 000 exact filters each, then 10 publishers on random subscribed topics (one delivery each).`,
    `- Brokers: ${results.brokers.spindle} (LOCAL store, a fresh data directory per start, $SYS, WebSocket and admin off, limits.maxInflight and receiveMaximum 65535, maxQueuedMessages 1 000 000); ${results.brokers.mosquitto} (persistence false, max_inflight_messages 0, max_queued_messages 1 000 000, otherwise as Debian ships it: Nagle on); ${results.brokers.aedes} (default in-memory persistence, net.Server); ${results.brokers.rumqttd ?? 'rumqttd'} (cargo install; a v4 and a v5 listener, next_connection_delay_ms 0, max_connections 20 000, commit log 10 x 10 MB per filter, max_inflight_count 4096, max_outgoing_packet_count 200, raised to the topic count for the retained scenario; its outgoing QoS 1 window is fixed at 100; its accept loop awaits a millisecond timer after each connection, so it accepts about 1000 per second; not run on 1 M subscriptions, where it matches each new topic against every filter in turn); ${results.brokers.mochi ?? 'mochi'} (go install of its own program: one TCP listener for 3.1.1 and 5.0, the library's defaults: in-memory, 8192 QoS 1 messages in flight and an outgoing queue of 8192 packets per client, Receive Maximum 1024, $SYS refreshed every second; GOMAXPROCS follows the pinning).`,
    `- Load generator: spindle-loadgen (bench/loadgen), one epoll thread; its CPU over the measured windows: median ${median(loadgen).toFixed(2)}, max ${Math.max(...loadgen).toFixed(2)} of a core; ${bound} of ${results.runs.length} runs at 95 % or more of its core (loadgen-bound). On loopback the sender's core also does the receiver's TCP work, so its system time includes kernel work done for the broker.`,
    `- ${disturbed} of ${results.runs.length} recorded runs were still disturbed after retries (other processes used over a quarter of a core, or steal); a disturbed run is repeated once.`,
    `- Measured ${m.date} on ${m.cpu} (${m.cores} cores), Node ${m.node}; ${results.seconds ?? '?'} s in all.`,
    ...(results.options.merged ? [`- ${String(results.options.merged)}`] : []),
    '',
  );
  if (tally.unmet.length) lines.push(`Not met: ${tally.unmet.join('; ')}.`, '');
  for (const c of chartList) lines.push(`![${c.title}](${chartDir}${c.file})`, '');
  return lines.join('\n');
}

const START = '<!-- bench:compare:start -->';
const END = '<!-- bench:compare:end -->';

/** Writes compare.json, compare.md and the charts into `dir`; replaces the table between the markers of the page `readme` names, when given. */
export function writeCompareReport(results: CompareResults, dir: string, readme: string | null): void {
  const sums = summarise(results);
  results.summary = sums;
  writeFileSync(path.join(dir, 'compare.json'), JSON.stringify(results, null, 2) + '\n');
  const chartList = charts(results, sums);
  for (const c of chartList) writeFileSync(path.join(dir, c.file), c.svg);
  const md = markdown(results, sums, chartList, '');
  writeFileSync(path.join(dir, 'compare.md'), md);
  console.log('\n' + md);
  if (readme) {
    const text = readFileSync(readme, 'utf8');
    const a = text.indexOf(START);
    const b = text.indexOf(END);
    if (a < 0 || b < a) throw new Error(`${readme} has no ${START} ... ${END} markers`);
    const rel = path.relative(path.dirname(readme), dir) + '/';
    const body = markdown(results, sums, chartList, rel);
    writeFileSync(readme, text.slice(0, a + START.length) + '\n' + body + text.slice(b));
  }
}
