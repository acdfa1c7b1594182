// The version of what nodes say to each other over NATS: heartbeats, interest, claims, the frames
// of messages and of the QoS stream. Raise it with any change a node of the previous build would
// read wrongly. Nodes of another format are not joined (cluster.ts): their heartbeats are logged
// and counted, their frames dropped and counted, nothing is sent to them. A rolling upgrade
// therefore works between builds of the same format; across formats, the whole cluster is stopped
// and started on the new build (docs/operating/cluster.md).
//   1: heartbeats without `wire` (builds before issue 26's handover work).
//   2: message identities and per-session lists in frames, forward handles (issue 26).
export const WIRE_FORMAT = 2;

/** The format a heartbeat says (1 when it says none: a build from before the field). */
export function wireFormatOf(hb: { wire?: unknown }): number {
  return typeof hb.wire === 'number' && Number.isInteger(hb.wire) ? hb.wire : 1;
}
