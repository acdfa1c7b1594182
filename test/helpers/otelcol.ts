// A real OpenTelemetry Collector (built by scripts/ensure-otelcol.sh from scripts/otelcol/: the
// OTLP receiver and the contrib file exporter) for the OpenTelemetry tests: its own temporary
// directory with a configuration it writes, OTLP/HTTP (and gRPC) on free ports of 127.0.0.1, every
// signal written by the file exporter as JSON lines (one OTLP export request per line, in the
// OTLP/JSON encoding: ids in hex, 64-bit numbers as strings), owned by the test process
// (children.ts). The readers below flatten what arrived so tests can look for a span, a metric
// data point or a log record.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';

import { ownChild } from './children.ts';
import { waitFor, type WaitForOptions } from './wait.ts';
import { canConnect, freePort } from './ports.ts';

export const OTELCOL = path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'spindle', 'spindle-otelcol');

/** An OTLP/JSON AnyValue. */
export interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: KeyValue[] };
  bytesValue?: string;
}
export interface KeyValue {
  key: string;
  value: AnyValue;
}

export interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, unknown>;
  status?: { code?: number; message?: string };
  events?: { name: string; timeUnixNano: string; attributes?: KeyValue[] }[];
  links?: { traceId: string; spanId: string }[];
  resource: Record<string, unknown>;
  scope: string;
}

export interface ExportedDataPoint {
  attributes: Record<string, unknown>;
  /** Sums and gauges. */
  value?: number;
  /** Histograms. */
  count?: number;
  sum?: number;
  bucketCounts?: number[];
  explicitBounds?: number[];
  timeUnixNano?: string;
}

export interface ExportedMetric {
  name: string;
  description?: string;
  unit?: string;
  /** sum, gauge, histogram, exponentialHistogram or summary. */
  type: string;
  /** For sums. */
  monotonic?: boolean;
  aggregationTemporality?: number;
  dataPoints: ExportedDataPoint[];
  resource: Record<string, unknown>;
  scope: string;
}

export interface ExportedLog {
  timeUnixNano?: string;
  observedTimeUnixNano?: string;
  severityNumber?: number;
  severityText?: string;
  body: unknown;
  attributes: Record<string, unknown>;
  traceId?: string;
  spanId?: string;
  resource: Record<string, unknown>;
  scope: string;
}

export interface Collector {
  /** http://127.0.0.1:<port>, the OTLP/HTTP base: append /v1/traces, /v1/metrics, /v1/logs. */
  httpEndpoint: string;
  /** 127.0.0.1:<port>, OTLP/gRPC. */
  grpcEndpoint: string;
  dir: string;
  spans(): ExportedSpan[];
  metrics(): ExportedMetric[];
  logs(): ExportedLog[];
  /** Waits until `pick` answers something truthy for what arrived so far, and returns it. */
  waitForSpans<T>(pick: (spans: ExportedSpan[]) => T, options?: WaitForOptions): Promise<Exclude<T, false | 0 | '' | null | undefined>>;
  waitForMetrics<T>(pick: (metrics: ExportedMetric[]) => T, options?: WaitForOptions): Promise<Exclude<T, false | 0 | '' | null | undefined>>;
  waitForLogs<T>(pick: (logs: ExportedLog[]) => T, options?: WaitForOptions): Promise<Exclude<T, false | 0 | '' | null | undefined>>;
  stop(): Promise<void>;
  /** What the collector wrote to its stdout and stderr so far (for failure messages). */
  output(): string;
}

/** `bytes` random bytes in hex: a trace id (16) or a span id (8) for a test's traceparent. */
export function randomHex(bytes: number): string {
  return Buffer.from(Array.from({ length: bytes }, () => Math.floor(Math.random() * 256))).toString('hex');
}

/** The spans of one trace. */
export function traceOf(spans: ExportedSpan[], traceId: string): ExportedSpan[] {
  return spans.filter((s) => s.traceId === traceId);
}

/** The spans named `name` whose parent is `parent`. */
export function childrenOf(spans: ExportedSpan[], parent: ExportedSpan, name: string): ExportedSpan[] {
  return spans.filter((s) => s.parentSpanId === parent.spanId && s.name === name);
}

/** An MQTT 5 packet's user property (its first value when repeated), as mqtt.js gives them. */
export function userProperty(packet: { properties?: { userProperties?: Record<string, string | string[]> } }, name: string): string | undefined {
  const v = packet.properties?.userProperties?.[name];
  return Array.isArray(v) ? v[0] : v;
}

/** An OTLP/JSON AnyValue as a plain value (ints as numbers when they fit, lists and maps unfolded). */
export function anyValue(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return (v.arrayValue?.values ?? []).map(anyValue);
  if ('kvlistValue' in v) return attributes(v.kvlistValue?.values);
  if ('bytesValue' in v) return Buffer.from(v.bytesValue ?? '', 'base64');
  return undefined;
}

export function attributes(list: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = anyValue(kv.value);
  return out;
}

interface Line {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { scope?: { name?: string }; spans?: any[] }[] }[];
  resourceMetrics?: { resource?: { attributes?: KeyValue[] }; scopeMetrics?: { scope?: { name?: string }; metrics?: any[] }[] }[];
  resourceLogs?: { resource?: { attributes?: KeyValue[] }; scopeLogs?: { scope?: { name?: string }; logRecords?: any[] }[] }[];
}

function readLines(file: string): Line[] {
  if (!existsSync(file)) return [];
  const out: Line[] = [];
  for (const text of readFileSync(file, 'utf8').split('\n')) {
    if (!text.trim()) continue;
    try {
      out.push(JSON.parse(text) as Line);
    } catch {
      // A line being written while we read: it is complete on the next read.
    }
  }
  return out;
}

function numberValue(p: { asInt?: string | number; asDouble?: number }): number | undefined {
  if (p.asInt !== undefined) return Number(p.asInt);
  if (p.asDouble !== undefined) return p.asDouble;
  return undefined;
}

function dataPoint(p: any): ExportedDataPoint {
  return {
    attributes: attributes(p.attributes),
    value: numberValue(p),
    count: p.count !== undefined ? Number(p.count) : undefined,
    sum: p.sum,
    bucketCounts: p.bucketCounts?.map(Number),
    explicitBounds: p.explicitBounds,
    timeUnixNano: p.timeUnixNano,
  };
}

export async function startCollector(): Promise<Collector> {
  if (!existsSync(OTELCOL)) throw new Error(`${OTELCOL} is missing: scripts/ensure-otelcol.sh builds it`);
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-otelcol-'));
  const httpPort = await freePort();
  const grpcPort = await freePort();
  const out = path.join(dir, 'out.jsonl');
  const config = path.join(dir, 'config.yaml');
  writeFileSync(config, [
    'receivers:',
    '  otlp:',
    '    protocols:',
    `      http: { endpoint: "127.0.0.1:${httpPort}" }`,
    `      grpc: { endpoint: "127.0.0.1:${grpcPort}" }`,
    'exporters:',
    '  file:',
    `    path: "${out}"`,
    '    flush_interval: 50ms',
    'service:',
    '  telemetry:',
    // No metrics server of its own (it would take port 8888, shared by collectors run at once).
    '    metrics: { level: none }',
    '    logs: { level: warn }',
    '  pipelines:',
    '    traces: { receivers: [otlp], exporters: [file] }',
    '    metrics: { receivers: [otlp], exporters: [file] }',
    '    logs: { receivers: [otlp], exporters: [file] }',
    '',
  ].join('\n'));

  let output = '';
  const child: ChildProcess = ownChild(spawn(OTELCOL, ['--config', config], { stdio: ['ignore', 'pipe', 'pipe'] }));
  child.stdout!.on('data', (d: Buffer) => { output += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { output += d.toString(); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`the collector exited (${child.exitCode}): ${output}`);
      return (await canConnect(httpPort)) && (await canConnect(grpcPort));
    }, { message: 'the OpenTelemetry Collector listening' });
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }

  const spans = (): ExportedSpan[] => readLines(out).flatMap((l) => (l.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributes(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) => (ss.spans ?? []).map((s): ExportedSpan => ({
      ...s,
      parentSpanId: s.parentSpanId || undefined,
      attributes: attributes(s.attributes),
      resource,
      scope: ss.scope?.name ?? '',
    })));
  }));
  const metrics = (): ExportedMetric[] => readLines(out).flatMap((l) => (l.resourceMetrics ?? []).flatMap((rm) => {
    const resource = attributes(rm.resource?.attributes);
    return (rm.scopeMetrics ?? []).flatMap((sm) => (sm.metrics ?? []).map((m): ExportedMetric => {
      const type = ['sum', 'gauge', 'histogram', 'exponentialHistogram', 'summary'].find((t) => t in m) ?? 'unknown';
      const body = m[type] ?? {};
      return {
        name: m.name,
        description: m.description,
        unit: m.unit,
        type,
        monotonic: body.isMonotonic,
        aggregationTemporality: body.aggregationTemporality,
        dataPoints: (body.dataPoints ?? []).map(dataPoint),
        resource,
        scope: sm.scope?.name ?? '',
      };
    }));
  }));
  const logs = (): ExportedLog[] => readLines(out).flatMap((l) => (l.resourceLogs ?? []).flatMap((rl) => {
    const resource = attributes(rl.resource?.attributes);
    return (rl.scopeLogs ?? []).flatMap((sl) => (sl.logRecords ?? []).map((r): ExportedLog => ({
      timeUnixNano: r.timeUnixNano,
      observedTimeUnixNano: r.observedTimeUnixNano,
      severityNumber: r.severityNumber,
      severityText: r.severityText,
      body: anyValue(r.body),
      attributes: attributes(r.attributes),
      traceId: r.traceId || undefined,
      spanId: r.spanId || undefined,
      resource,
      scope: sl.scope?.name ?? '',
    })));
  }));

  return {
    httpEndpoint: `http://127.0.0.1:${httpPort}`,
    grpcEndpoint: `127.0.0.1:${grpcPort}`,
    dir,
    spans,
    metrics,
    logs,
    waitForSpans: (pick, options) => waitFor(() => pick(spans()), { message: 'spans in the collector', ...options }),
    waitForMetrics: (pick, options) => waitFor(() => pick(metrics()), { message: 'metrics in the collector', ...options }),
    waitForLogs: (pick, options) => waitFor(() => pick(logs()), { message: 'log records in the collector', ...options }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
    output: () => output,
  };
}
