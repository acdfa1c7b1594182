// Owns the trace context a rule output carries from a worker to the main thread's actions
// (OpenTelemetry traces, src/features/otel-traces): a traced message's output gets the
// traceparent of its rule's span under TRACEPARENT_FIELD on the worker; the main thread takes it
// off before any action sees the output and keeps it beside the output, where the webhook and
// save_kafka actions read it for their `traceparent` header. Outputs of messages not traced carry
// nothing.

/** The field a traced output crosses threads with (no SQL alias can be this name). */
export const TRACEPARENT_FIELD = '\u0000traceparent';

const traceparents = new WeakMap<object, string>();

/** Takes the traceparent off an output that crossed from a worker (main thread). */
export function takeTraceparent(output: Record<string, unknown>): void {
  if (!(TRACEPARENT_FIELD in output)) return;
  const value = output[TRACEPARENT_FIELD];
  delete output[TRACEPARENT_FIELD];
  if (typeof value === 'string') traceparents.set(output, value);
}

/** The traceparent of the message an output was made of; undefined when it was not traced. */
export function traceparentOf(output: object): string | undefined {
  return traceparents.get(output);
}
