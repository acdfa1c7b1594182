// The Sparkplug B topic namespace (Sparkplug 3.0, 4.1): spBv1.0/{group}/{type}/{edge node}[/{device}]
// and spBv1.0/STATE/{host id}, and the filters of the messages the edge-node state is built from
// (commands are not: they change no state).

export const NAMESPACE = 'spBv1.0';

export type NodeMessageType = 'NBIRTH' | 'NDEATH' | 'NDATA' | 'NCMD';
export type DeviceMessageType = 'DBIRTH' | 'DDEATH' | 'DDATA' | 'DCMD';

export type SparkplugTopic =
  | { kind: 'node'; type: NodeMessageType; group: string; node: string }
  | { kind: 'device'; type: DeviceMessageType; group: string; node: string; device: string }
  | { kind: 'state'; host: string };

const NODE_TYPES = new Set(['NBIRTH', 'NDEATH', 'NDATA', 'NCMD']);
const DEVICE_TYPES = new Set(['DBIRTH', 'DDEATH', 'DDATA', 'DCMD']);

/** The filters the state taps: births, deaths, data and the hosts' STATE. */
export const STATE_FILTERS: readonly string[] = [
  ...['NBIRTH', 'NDEATH', 'NDATA'].map((t) => `${NAMESPACE}/+/${t}/+`),
  ...['DBIRTH', 'DDEATH', 'DDATA'].map((t) => `${NAMESPACE}/+/${t}/+/+`),
  `${NAMESPACE}/STATE/+`,
];

/** The topic read as a Sparkplug B topic, or null when it is not one. */
export function parseTopic(topic: string): SparkplugTopic | null {
  const l = topic.split('/');
  if (l[0] !== NAMESPACE || l.some((level) => level === '')) return null;
  if (l.length === 3 && l[1] === 'STATE') return { kind: 'state', host: l[2] };
  if (l.length === 4 && NODE_TYPES.has(l[2])) return { kind: 'node', type: l[2] as NodeMessageType, group: l[1], node: l[3] };
  if (l.length === 5 && DEVICE_TYPES.has(l[2])) return { kind: 'device', type: l[2] as DeviceMessageType, group: l[1], node: l[3], device: l[4] };
  return null;
}
