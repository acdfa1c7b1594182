// Owns a source message's headers as text (Kafka headers, AMQP headers, Pulsar and RocketMQ
// properties): what the templates read as `${headers.h}` (KAFKA) and where the trace context
// comes from (mapping.ts). A value that is bytes is read as UTF-8, a list is joined by ",", and
// one that is neither text, number, boolean nor bytes (an AMQP table) is left out.
export function headerText(headers: Record<string, unknown> | undefined | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined || headers === null) return out;
  for (const [name, v] of Object.entries(headers)) {
    const text = Array.isArray(v) ? v.map(one).filter((x) => x !== undefined).join(',') : one(v);
    if (text !== undefined) out[name] = text;
  }
  return out;
}

function one(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  return undefined;
}
