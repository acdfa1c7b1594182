// The Sparkplug B routes: the groups, the edge nodes (by group, paged), one edge node with its
// devices and metrics, and the primary hosts' STATE.
import { Type } from '@sinclair/typebox';

import { HttpError, ok, paged, type Route } from '../../admin/http.ts';
import { PAGING, pageOf, route, strict } from '../../admin/schema.ts';
import type { EdgeNodeState, SparkplugState } from './state.ts';

function summaryOf(n: EdgeNodeState): Record<string, unknown> {
  return {
    group: n.group,
    node: n.node,
    online: n.online,
    bdSeq: n.birth?.bdSeq ?? null,
    seq: n.seq,
    birthAt: n.birth?.at ?? null,
    deathAt: n.death?.at ?? null,
    lastDataAt: n.lastDataAt,
    devices: n.devices.size,
    devicesOnline: [...n.devices.values()].filter((d) => d.online).length,
  };
}

export function sparkplugRoutes(state: SparkplugState | null): Route[] {
  const need = (): SparkplugState => {
    if (state === null) throw new HttpError('UNAVAILABLE', 'the Sparkplug B state is off (sparkplug.enabled is false)');
    return state;
  };
  return [
    {
      method: 'GET',
      path: '/api/sparkplug/groups',
      access: 'read',
      tag: 'sparkplug',
      summary: 'Sparkplug B groups kept (seen by any node of the cluster, and across restarts): [{group, edgeNodes, online}]. 503 when sparkplug.enabled is false',
      handler: () => ok(need().groups()),
    },
    route({
      method: 'GET',
      path: '/api/sparkplug/nodes',
      access: 'read',
      tag: 'sparkplug',
      summary: 'Sparkplug B edge nodes kept (seen by any node of the cluster, and across restarts), by group then name: {data: [{group, node, online, bdSeq, seq, birthAt, deathAt, lastDataAt, devices, devicesOnline}], total, page, size} (times in ms since the epoch, as the node that routed them received them); `group` filters. 503 when sparkplug.enabled is false',
      query: Type.Object({ ...PAGING, group: Type.Optional(Type.String({ minLength: 1 })) }, strict),
      handler(req) {
        const { page, size } = pageOf(req.queryValues);
        return paged(need().list(req.queryValues.group).map(summaryOf), page, size);
      },
    }),
    {
      method: 'GET',
      path: '/api/sparkplug/nodes/:group/:node',
      access: 'read',
      tag: 'sparkplug',
      summary: 'One Sparkplug B edge node: {group, node, online, seq, lastDataAt, birth: {at, timestamp, seq, bdSeq, metrics: [{name, alias, datatype, type, value, timestamp}]} | null (metric values updated by NDATA), death: {at, timestamp, bdSeq} | null, devices: [{device, online, seq, lastDataAt, birth, death}]}. 404 when not seen',
      handler(req) {
        const n = need().get(req.params.group, req.params.node);
        if (n === undefined) throw new HttpError('NOT_FOUND', `no Sparkplug B edge node ${req.params.group}/${req.params.node}`, { field: 'node' });
        return ok({ ...n, devices: [...n.devices.values()].sort((a, b) => (a.device < b.device ? -1 : 1)) });
      },
    },
    {
      method: 'GET',
      path: '/api/sparkplug/hosts',
      access: 'read',
      tag: 'sparkplug',
      summary: 'Sparkplug B primary host applications seen on spBv1.0/STATE/{host id}: [{host, online, timestamp, at}] (online and timestamp from the STATE payload, at when this node received it). 503 when sparkplug.enabled is false',
      handler: () => ok(need().hostList()),
    },
  ];
}
