// Overview: live charts of the broker (connections, messages in and out per second, drops,
// subscriptions, retained), and the same per endpoint, from the samples the admin server pushes.
// In a cluster the samples carry every node's figures too: a table and charts per node (at the
// bottom, so their arrival moves nothing above them). Overload protection's state, read every 2 s.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { Chart } from '../chart.js';
import { api } from '../api.js';
import { NodeFigures, useNodes } from './node-figures.js';

const html = htm.bind(h);

export function Overview({ live }) {
  const [last, setLast] = useState(live.last);
  useEffect(() => live.on((s) => setLast(s ?? live.last)), []);
  const fmt = (n) => (n === undefined || n === null ? '–' : Math.round(n).toLocaleString());
  // In a cluster the figures below are this node's (its workers'); connections also of every node.
  const here = last?.nodes ? ' (this node)' : '';
  const allConnections = last?.nodes ? last.nodes.reduce((n, x) => n + x.connections, 0) : null;
  return html`<div>
    <section class="stats" aria-label="now">
      <div class="stat"><span>Connections${here}</span><b data-testid="stat-connections">${fmt(last?.connections)}</b></div>
      ${allConnections !== null && html`<div class="stat"><span>Connections (every node)</span><b data-testid="stat-connections-all">${fmt(allConnections)}</b>${last.nodesMissing?.length ? html`<small class="muted"> without ${last.nodesMissing.length} node(s) not answering</small>` : null}</div>`}
      <div class="stat"><span>Sessions${here} (online and offline)</span><b data-testid="stat-sessions">${fmt(last?.sessions)}</b></div>
      <div class="stat"><span>Messages in/s</span><b data-testid="stat-in">${fmt(last?.in)}</b></div>
      <div class="stat"><span>Messages out/s</span><b data-testid="stat-out">${fmt(last?.out)}</b></div>
      <div class="stat"><span>Dropped/s</span><b>${fmt(last?.dropped)}</b></div>
      <div class="stat"><span>Subscriptions${here} (clients')</span><b data-testid="stat-subscriptions">${fmt(last?.subscriptions)}</b>
        <small class="muted" data-testid="stat-subscriptions-apart">${subscriptionsApart(last)}</small></div>
      <div class="stat"><span>Retained (not $SYS)</span><b>${fmt(last?.retained)}</b></div>
    </section>
    <p class="muted">Live: ${live.state}; ${live.samples.length} samples kept (the last hour, one a second).</p>
    <${NodesCard} last=${last} />
    <${OverloadCard} />
    <div class="grid">
      <${Chart} title="Messages per second" testId="chart-messages" live=${live} series=${[{ label: 'in', value: (s) => s.in }, { label: 'out', value: (s) => s.out }]} />
      <${Chart} title="Connections" testId="chart-connections" live=${live} series=${[{ label: 'connections', value: (s) => s.connections }]} />
      <${Chart} title="Dropped per second" live=${live} series=${[{ label: 'dropped', value: (s) => s.dropped }]} />
      <${Chart} title="Subscriptions and retained" live=${live} series=${[{ label: 'subscriptions', value: (s) => s.subscriptions }, { label: 'retained', value: (s) => s.retained }]} />
    </div>
    <section class="card">
      <h3>Per endpoint</h3>
      <table>
        <thead><tr><th>Endpoint</th><th>Port</th><th>Connections</th><th>In/s</th><th>Out/s</th><th>Dropped/s</th></tr></thead>
        <tbody>${(last?.endpoints ?? []).map((e) => html`<tr key=${e.id}><td>${e.id}</td><td>${e.port}</td><td>${fmt(e.connections)}</td><td>${fmt(e.in)}</td><td>${fmt(e.out)}</td><td>${fmt(e.dropped)}</td></tr>`)}</tbody>
      </table>
    </section>
    ${last?.nodes && html`<${PerNode} live=${live} last=${last} fmt=${fmt} />`}
  </div>`;
}

/** "+3 $SYS, +2 internal": the subscriptions not in the clients' count. */
export function subscriptionsApart(s) {
  if (!s || s.subscriptionsSys === undefined) return '';
  return `+${s.subscriptionsSys.toLocaleString()} $SYS, +${s.subscriptionsInternal.toLocaleString()} internal`;
}

/** Every node's connections and messages per second (clustering on): a table, and a chart per figure. */
function PerNode({ live, last, fmt }) {
  const names = last.nodes.map((n) => n.node);
  const per = (field) => names.map((name) => ({ label: name, value: (s) => s.nodes?.find((n) => n.node === name)?.[field] ?? null }));
  const key = names.join(' ');
  return html`<section class="card" aria-label="per node">
    <h3>Per node</h3>
    <table>
      <thead><tr><th>Node</th><th>Connections</th><th>In/s</th><th>Out/s</th><th>Dropped/s</th></tr></thead>
      <tbody>
        ${last.nodes.map((n) => html`<tr key=${n.node} data-node=${n.node}><td>${n.node}${n.self ? ' (this node)' : ''}</td><td>${fmt(n.connections)}</td><td>${fmt(n.in)}</td><td>${fmt(n.out)}</td><td>${fmt(n.dropped)}</td></tr>`)}
        ${(last.nodesMissing ?? []).map((m) => html`<tr key=${m.node} data-node=${m.node} class="muted"><td>${m.node}</td><td colspan="4">no figures: ${m.reason}</td></tr>`)}
      </tbody>
    </table>
    <div class="grid">
      <${Chart} key=${`c ${key}`} title="Connections per node" testId="chart-node-connections" live=${live} series=${per('connections')} />
      <${Chart} key=${`i ${key}`} title="Messages in per second, per node" testId="chart-node-in" live=${live} series=${per('in')} />
      <${Chart} key=${`o ${key}`} title="Messages out per second, per node" testId="chart-node-out" live=${live} series=${per('out')} />
    </div>
  </section>`;
}

/** Every node's version, uptime, CPU, memory, connections and last seen (this node alone without a cluster). */
function NodesCard({ last }) {
  const [nodes, error] = useNodes();
  return html`<section class="card" aria-label="nodes">
    <h3>${nodes.length > 1 ? `Nodes (${nodes.length})` : 'This node'}</h3>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <${NodeFigures} nodes=${nodes} last=${last} />
  </section>`;
}

/** Overload protection: the node's state (overloaded when a worker is), and each worker's measures. */
function OverloadCard() {
  const [o, setO] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    const load = () => api('GET', '/api/overload').then((r) => { setO(r.data); setError(null); }, (err) => setError(err.message));
    void load();
    const t = setInterval(load, 2000);
    return () => clearInterval(t);
  }, []);
  const mb = (n) => `${Math.round(n / 1048576)} MB`;
  if (!o) return html`<section class="card" aria-label="overload">${error && html`<p class="error" role="alert">${error}</p>`}</section>`;
  return html`<section class="card" aria-label="overload">
    <h3>Overload protection: <span data-testid="overload-state" class=${o.state === 'overloaded' ? 'error' : ''}>${o.marks.enabled ? o.state : 'off'}</span></h3>
    <p class="muted">New connections are refused (CONNACK 0x89 Server busy) on a worker whose event-loop lag passes ${o.marks.lagHighMs} ms${o.marks.heapHighMB ? `, heap ${o.marks.heapHighMB} MB` : ''}${o.marks.rssHighMB ? `, RSS ${o.marks.rssHighMB} MB` : ''}, until below ${o.marks.lagLowMs} ms.</p>
    <table>
      <thead><tr><th>Worker</th><th>State</th><th>Lag (ms)</th><th>Heap</th><th>RSS</th><th>Refused</th><th>Shed</th></tr></thead>
      <tbody>${o.workers.map((w) => html`<tr key=${w.worker} data-worker=${w.worker}><td>${w.worker}</td><td>${w.state}${w.reasons.length ? ` (${w.reasons.join(', ')})` : ''}</td><td>${w.lagMs}</td><td>${mb(w.heapUsedBytes)}</td><td>${mb(w.rssBytes)}</td><td data-testid=${`overload-refused-${w.worker}`}>${w.refused}</td><td>${w.shed}</td></tr>`)}</tbody>
    </table>
  </section>`;
}
