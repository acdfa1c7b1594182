// Sparkplug B: the edge nodes the cluster has seen under spBv1.0/ (by group, paged), online or
// offline, with their last birth and death; a node opens to its devices (their births and deaths)
// and its birth metrics; the primary hosts' STATE. Refreshed every 2 s while open.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';

const html = htm.bind(h);
const SIZE = 50;

const time = (ms) => (ms ? new Date(ms).toLocaleString() : '');
const state = (online) => html`<span class=${online ? 'ok' : 'error'} data-online=${String(online)}>${online ? 'online' : 'offline'}</span>`;
const shown = (v) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function Sparkplug() {
  const [group, setGroup] = useState('');
  const [page, setPage] = useState(1);
  const [nodes, setNodes] = useState({ data: [], total: 0 });
  const [groups, setGroups] = useState([]);
  const [hosts, setHosts] = useState([]);
  const [open, setOpen] = useState(null);
  const [detail, setDetail] = useState(null);
  const [error, setError] = useState(null);
  async function load() {
    try {
      const [n, g, hs] = await Promise.all([api('GET', '/api/sparkplug/nodes', undefined, { query: { page, size: SIZE, group: group || undefined } }), api('GET', '/api/sparkplug/groups'), api('GET', '/api/sparkplug/hosts')]);
      setNodes(n);
      setGroups(g.data);
      setHosts(hs.data);
      if (open) setDetail((await api('GET', '/api/sparkplug/nodes/{group}/{node}', undefined, { params: { group: open.group, node: open.node } })).data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
    const t = setInterval(load, 2000);
    return () => clearInterval(t);
  }, [group, page, open]);
  const pages = Math.max(1, Math.ceil(nodes.total / SIZE));
  return html`<div>
    <h2>Sparkplug B</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="edge nodes">
      <p>
        <label>Group <select value=${group} onChange=${(e) => { setGroup(e.target.value); setPage(1); }}>
          <option value="">all</option>
          ${groups.map((g) => html`<option key=${g.group} value=${g.group}>${g.group} (${g.online} of ${g.edgeNodes} online)</option>`)}
        </select></label>
        ${' '}${nodes.total} edge nodes
      </p>
      <table>
        <thead><tr><th>Group</th><th>Edge node</th><th>State</th><th>bdSeq</th><th>Last birth</th><th>Last death</th><th>Last data</th><th>Devices online</th></tr></thead>
        <tbody>${nodes.data.map((n) => html`<tr key=${`${n.group}/${n.node}`} data-node=${`${n.group}/${n.node}`}>
          <td>${n.group}</td><td><a href="#" onClick=${(e) => { e.preventDefault(); setOpen({ group: n.group, node: n.node }); }}>${n.node}</a></td>
          <td>${state(n.online)}</td><td>${shown(n.bdSeq)}</td><td>${time(n.birthAt)}</td><td>${time(n.deathAt)}</td><td>${time(n.lastDataAt)}</td>
          <td>${n.devicesOnline} of ${n.devices}</td>
        </tr>`)}</tbody>
      </table>
      ${pages > 1 && html`<p><button disabled=${page <= 1} onClick=${() => setPage(page - 1)}>Previous</button> page ${page} of ${pages} <button disabled=${page >= pages} onClick=${() => setPage(page + 1)}>Next</button></p>`}
    </section>
    ${detail && open && html`<section class="card" aria-label="edge node" data-detail=${`${detail.group}/${detail.node}`}>
      <h3>${detail.group} / ${detail.node} ${state(detail.online)} <button onClick=${() => { setOpen(null); setDetail(null); }}>Close</button></h3>
      <p>Birth: ${detail.birth ? `${time(detail.birth.at)}, bdSeq ${shown(detail.birth.bdSeq)}, seq ${shown(detail.birth.seq)}` : 'none'}. Death: ${detail.death ? `${time(detail.death.at)}, bdSeq ${shown(detail.death.bdSeq)}` : 'none'}.</p>
      <table aria-label="devices">
        <thead><tr><th>Device</th><th>State</th><th>Last birth</th><th>Last death</th><th>Last data</th><th>Metrics</th></tr></thead>
        <tbody>${detail.devices.map((d) => html`<tr key=${d.device} data-device=${d.device}>
          <td>${d.device}</td><td>${state(d.online)}</td><td>${time(d.birth?.at)}</td><td>${time(d.death?.at)}</td><td>${time(d.lastDataAt)}</td>
          <td>${(d.birth?.metrics ?? []).map((m) => `${m.name ?? `alias ${m.alias}`} = ${shown(m.value)}`).join(', ')}</td>
        </tr>`)}</tbody>
      </table>
      <table aria-label="metrics">
        <thead><tr><th>Metric</th><th>Alias</th><th>Type</th><th>Value</th></tr></thead>
        <tbody>${(detail.birth?.metrics ?? []).map((m, i) => html`<tr key=${i} data-metric=${m.name ?? ''}><td>${m.name ?? ''}</td><td>${shown(m.alias)}</td><td>${m.type ?? ''}</td><td>${shown(m.value)}</td></tr>`)}</tbody>
      </table>
    </section>`}
    <h3>Primary hosts</h3>
    <section class="card" aria-label="primary hosts">
      <table>
        <thead><tr><th>Host</th><th>State</th><th>Timestamp</th><th>Received</th></tr></thead>
        <tbody>${hosts.map((x) => html`<tr key=${x.host} data-host=${x.host}><td>${x.host}</td><td>${state(x.online)}</td><td>${time(x.timestamp)}</td><td>${time(x.at)}</td></tr>`)}</tbody>
      </table>
    </section>
  </div>`;
}
