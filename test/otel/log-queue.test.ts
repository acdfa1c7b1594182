// The queue of log records waiting for OTLP export (src/features/otel/log-queue.ts), through the
// SDK's LoggerProvider as the feature uses it, with an exporter the test answers: its bound
// (records past it dropped and counted), batches of BATCH_SIZE, one request at a time, a failed
// batch dropped and counted, and shutdown sending what waits.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { LoggerProvider, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';

import { BATCH_SIZE, LogQueue } from '../../src/features/otel/log-queue.ts';
import { waitFor } from '../helpers/wait.ts';

/** An exporter whose requests wait until the test answers them. */
class HeldExporter implements LogRecordExporter {
  readonly requests: { records: ReadableLogRecord[]; answer: (r: ExportResult) => void }[] = [];
  shutDown = false;

  export(records: ReadableLogRecord[], done: (r: ExportResult) => void): void {
    this.requests.push({ records, answer: done });
  }

  async shutdown(): Promise<void> {
    this.shutDown = true;
  }

  async forceFlush(): Promise<void> {}
}

function setup(limit: number) {
  const exporter = new HeldExporter();
  const events = { exported: 0, dropped: { queue_full: 0, export_failed: 0 }, errors: [] as unknown[] };
  const queue = new LogQueue(exporter, limit, {
    exported: (n) => void (events.exported += n),
    dropped: (n, reason, err) => {
      events.dropped[reason] += n;
      if (err !== undefined) events.errors.push(err);
    },
  });
  const provider = new LoggerProvider({ processors: [queue] });
  const logger = provider.getLogger('test');
  const emit = (n: number, from = 0) => {
    for (let i = 0; i < n; i++) logger.emit({ body: `line ${from + i}`, severityNumber: 9 });
  };
  return { exporter, events, queue, provider, emit };
}

test('a full batch goes at once, one request at a time; the rest waits its turn', async () => {
  const { exporter, events, queue, emit } = setup(10 * BATCH_SIZE);
  emit(2 * BATCH_SIZE + 3);
  assert.equal(exporter.requests.length, 1, 'one request on its way');
  assert.equal(exporter.requests[0].records.length, BATCH_SIZE);
  assert.equal(exporter.requests[0].records[0].body, 'line 0');
  assert.equal(queue.size, BATCH_SIZE + 3);
  exporter.requests[0].answer({ code: ExportResultCode.SUCCESS });
  await waitFor(() => exporter.requests.length === 2, { message: 'the next full batch' });
  assert.equal(exporter.requests[1].records[0].body, `line ${BATCH_SIZE}`);
  exporter.requests[1].answer({ code: ExportResultCode.SUCCESS });
  // The 3 left are not a full batch: they go after the delay.
  await waitFor(() => exporter.requests.length === 3, { message: 'the rest after the delay' });
  assert.equal(exporter.requests[2].records.length, 3);
  exporter.requests[2].answer({ code: ExportResultCode.SUCCESS });
  await waitFor(() => events.exported === 2 * BATCH_SIZE + 3);
  assert.equal(queue.size, 0);
});

test('past the bound records are dropped and counted; a failed request drops its batch', async () => {
  const { exporter, events, queue, emit } = setup(5);
  emit(8);
  assert.equal(queue.size, 5);
  assert.equal(queue.full, true);
  assert.equal(events.dropped.queue_full, 3);
  await waitFor(() => exporter.requests.length === 1, { message: 'the batch after the delay' });
  assert.equal(queue.size, 0);
  const refused = new Error('503 Service Unavailable');
  exporter.requests[0].answer({ code: ExportResultCode.FAILED, error: refused });
  await waitFor(() => events.dropped.export_failed === 5);
  assert.deepEqual(events.errors, [refused]);
  assert.equal(events.exported, 0);
  // Room again.
  emit(1, 100);
  assert.equal(queue.size, 1);
});

test('shutdown sends what waits, stops the exporter, and takes nothing more', async () => {
  const { exporter, events, queue, provider, emit } = setup(100);
  emit(4);
  assert.equal(exporter.requests.length, 0, 'waiting for the delay');
  const closing = provider.shutdown();
  await waitFor(() => exporter.requests.length === 1, { message: 'the request on shutdown' });
  assert.equal(exporter.requests[0].records.length, 4);
  assert.equal(exporter.shutDown, false, 'the exporter stops after the last request');
  exporter.requests[0].answer({ code: ExportResultCode.SUCCESS });
  await closing;
  assert.equal(exporter.shutDown, true);
  assert.equal(events.exported, 4);
  queue.onEmit({} as never);
  assert.equal(queue.size, 0);
});

test('on shutdown, once a request fails the records still waiting are dropped: the stop does not wait for each', async () => {
  const { exporter, events, provider, emit } = setup(10 * BATCH_SIZE);
  emit(3 * BATCH_SIZE);
  assert.equal(exporter.requests.length, 1);
  const closing = provider.shutdown();
  exporter.requests[0].answer({ code: ExportResultCode.FAILED, error: new Error('timeout') });
  await closing;
  assert.equal(exporter.requests.length, 1, 'no request after the failure');
  assert.equal(events.dropped.export_failed, 3 * BATCH_SIZE);
  assert.equal(exporter.shutDown, true);
});
