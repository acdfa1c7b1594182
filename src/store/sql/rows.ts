// Conversions between Store records and SQL rows shared by the SQL backends: delivery state codes,
// the session expiry deadline, the rows written (column name -> value; the column lists give the
// order for drivers that bind arrays) and the records decoded from rows read back. The drivers
// return different JS types for the same column (postgres.js: bigint, boolean, string; mysql2:
// decimal strings for BIGINT, 0/1 for TINYINT(1), Buffers for VARBINARY keys), so decoding goes
// through bigintOf, bool and text, which accept either.
import { StoreError } from '../errors.ts';
import { NEVER_EXPIRES } from '../types.ts';
import type {
  DeliveryState,
  LoadedDelivery,
  NewDelivery,
  StoredMessage,
  StoredRetained,
  StoredSession,
  StoredSubscription,
  StoreStats,
} from '../types.ts';

/** A row as the drivers return it: column name -> value. */
export type Row = Record<string, unknown>;

const STATES: readonly DeliveryState[] = ['queued', 'inflight', 'pubrel'];

export function stateCode(state: DeliveryState): number {
  const code = STATES.indexOf(state);
  if (code < 0) throw new StoreError('STORE_INVALID', `unknown delivery state ${String(state)}`);
  return code;
}

export function stateName(code: number): DeliveryState {
  const state = STATES[code];
  if (state === undefined) throw new StoreError('STORE_IO', `stored delivery state ${code} is unknown`);
  return state;
}

/** When a session expires (ms since the epoch), or null while connected or never expiring. */
export function sessionDeadline(s: StoredSession): number | null {
  if (s.disconnectedAt === null || s.expiryInterval === NEVER_EXPIRES) return null;
  return s.disconnectedAt + s.expiryInterval * 1000;
}

export function qos(n: number): 0 | 1 | 2 {
  if (n !== 0 && n !== 1 && n !== 2) throw new StoreError('STORE_IO', `stored QoS ${n} is invalid`);
  return n;
}

export const MESSAGE_COLUMNS = ['id', 'topic', 'payload', 'qos', 'retain', 'properties', 'expires_at'] as const;
export const SESSION_COLUMNS = [
  'client_id', 'expiry_interval', 'disconnected_at', 'expires_at', 'username', 'node',
  'will_topic', 'will_payload', 'will_qos', 'will_retain', 'will_properties', 'will_expiry_interval', 'will_delay',
] as const;
export const DELIVERY_COLUMNS = ['client_id', 'message_id', 'seq', 'state', 'packet_id', 'qos', 'retain', 'subscription_ids'] as const;

type Columns<C extends readonly string[]> = Record<C[number], unknown>;
export type DeliveryRow = ReturnType<typeof deliveryRow>;

/** The values of `row` in the order of `columns`. */
export function values<C extends string>(row: Record<C, unknown>, columns: readonly C[]): unknown[] {
  return columns.map((c) => row[c]);
}

// Each row builder `satisfies` its column list: a column added to one and not the other fails to compile.
export function messageRow(m: StoredMessage) {
  return {
    id: m.id, topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, properties: m.properties, expires_at: m.expiresAt,
  } satisfies Columns<typeof MESSAGE_COLUMNS>;
}

/** A session with its will flattened into will_* columns (all null without a will). */
export function sessionRow(s: StoredSession) {
  const w = s.will;
  return {
    client_id: s.clientId,
    expiry_interval: s.expiryInterval,
    disconnected_at: s.disconnectedAt,
    expires_at: sessionDeadline(s),
    username: s.username,
    node: s.node ?? '',
    will_topic: w?.message.topic ?? null,
    will_payload: w?.message.payload ?? null,
    will_qos: w?.message.qos ?? null,
    will_retain: w?.message.retain ?? null,
    will_properties: w?.message.properties ?? null,
    will_expiry_interval: w?.expiryInterval ?? null,
    will_delay: w?.delay ?? null,
  } satisfies Columns<typeof SESSION_COLUMNS>;
}

/** A delivery as addMessage writes it: queued (state 0), no packet id yet. */
export function deliveryRow(messageId: bigint, d: NewDelivery) {
  return {
    client_id: d.clientId,
    message_id: messageId,
    seq: d.seq,
    state: 0,
    packet_id: 0,
    qos: d.qos,
    retain: d.retain,
    subscription_ids: JSON.stringify(d.subscriptionIds),
  } satisfies Columns<typeof DELIVERY_COLUMNS>;
}

/** BIGINT columns: bigint from postgres.js, a decimal string from mysql2. */
export function bigintOf(v: unknown): bigint {
  return typeof v === 'bigint' ? v : BigInt(v as string);
}

/** Boolean columns: boolean from postgres.js, 0/1 from mysql2 (TINYINT(1)). */
export function bool(v: unknown): boolean {
  return typeof v === 'boolean' ? v : Number(v) !== 0;
}

/** Key columns: strings from postgres.js, Buffers from mysql2 (VARBINARY). */
export function text(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
}

/** A message from a row holding the spindle_messages columns; `qosCol` and `retainCol` name
 * those two when a join renamed them (a delivery has its own qos and retain). */
export function toMessage(id: unknown, r: Row, qosCol: string, retainCol: string): StoredMessage {
  return {
    id: bigintOf(id),
    topic: r.topic as string,
    payload: r.payload as Buffer,
    qos: qos(Number(r[qosCol])),
    retain: bool(r[retainCol]),
    properties: (r.properties as Buffer | null) ?? null,
    expiresAt: Number(r.expires_at),
  };
}

export function toSession(r: Row): StoredSession {
  return {
    clientId: text(r.client_id),
    expiryInterval: Number(r.expiry_interval),
    disconnectedAt: r.disconnected_at === null ? null : Number(r.disconnected_at),
    username: (r.username as string | null) ?? null,
    // MySQL answers a VARBINARY as a Buffer (an empty one when no node was kept).
    ...(r.node != null && text(r.node) !== '' ? { node: text(r.node) } : {}),
    will:
      r.will_topic === null
        ? null
        : {
            delay: Number(r.will_delay),
            expiryInterval: Number(r.will_expiry_interval),
            message: {
              topic: r.will_topic as string,
              payload: r.will_payload as Buffer,
              qos: qos(Number(r.will_qos)),
              retain: bool(r.will_retain),
              properties: (r.will_properties as Buffer | null) ?? null,
            },
          },
  };
}

export function toSubscription(r: Row): StoredSubscription {
  return { clientId: text(r.client_id), filter: text(r.filter), options: Number(r.options), subscriptionId: Number(r.subscription_id) };
}

/** A delivery joined with its message, whose qos and retain come as m_qos and m_retain. */
export function toDelivery(r: Row): LoadedDelivery {
  return {
    clientId: text(r.client_id),
    messageId: bigintOf(r.message_id),
    seq: bigintOf(r.seq),
    state: stateName(Number(r.state)),
    packetId: Number(r.packet_id),
    qos: qos(Number(r.qos)),
    retain: bool(r.retain),
    subscriptionIds: JSON.parse(r.subscription_ids as string) as number[],
    message: toMessage(r.message_id, r, 'm_qos', 'm_retain'),
  };
}

/** A retained entry joined with its message; the entry's topic comes as r_topic. */
export function toRetained(r: Row): StoredRetained {
  return { topic: text(r.r_topic), message: toMessage(r.id, r, 'qos', 'retain') };
}

export function toAdminDoc<T>(r: Row): { id: string; doc: T } {
  return { id: text(r.id), doc: JSON.parse(r.doc as string) as T };
}

export function toStats(r: Row): StoreStats {
  return { sessions: Number(r.sessions), messages: Number(r.messages), deliveries: Number(r.deliveries), retained: Number(r.retained) };
}
