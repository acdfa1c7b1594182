// Cluster nodes: every node this one knows, with its state and figures (version, uptime, CPU,
// memory, connections from the live samples, last seen: pages/node-figures.js), and the drain and rebalance of the
// nodes: each node's connections and drain state, this node's run (progress, targets), and the
// buttons to drain this node, cancel, or rebalance the cluster (refreshed every 2 s while open).
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { usePoll } from '../forms.js';
import { connectionsOf, duration, megabytes, seen } from './node-figures.js';

const html = htm.bind(h);

export function Cluster({ live }) {
  const [last, setLast] = useState(live?.last);
  useEffect(() => live?.on((s) => setLast(s ?? live.last)), []);
  const [nodes, setNodes] = useState([]);
  const [drain, setDrain] = useState(null);
  const [rate, setRate] = useState('');
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState(null);
  async function load() {
    try {
      const [n, d] = await Promise.all([api('GET', '/api/cluster/nodes'), api('GET', '/api/cluster/drain')]);
      setNodes(n.data);
      setDrain(d.data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, 2000);
  async function act(path, confirmText) {
    if (confirmText && !window.confirm(confirmText)) return;
    try {
      const body = path.endsWith('/cancel') || rate === '' ? {} : { rate: Number(rate) };
      const r = await api('POST', path, body);
      setNotice(path.endsWith('rebalance') ? `Rebalance planned: ${r.data.moves.map((m) => `${m.from} moves ${m.count}${m.error ? ` (${m.error})` : ''}`).join(', ') || 'already even'}` : `This node is ${r.data.state}`);
      setError(null);
      await load();
    } catch (err) {
      setError(err.message);
    }
  }
  const self = drain?.self;
  const pct = self && self.total > 0 ? Math.round((100 * self.moved) / self.total) : 0;
  return html`<div>
    <h2>Cluster nodes</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${notice && html`<p class="notice" role="status">${notice}</p>`}
    <section class="card">
      <table>
        <thead><tr><th>Node</th><th>Address</th><th>State</th><th>Version</th><th>Uptime</th><th>CPU (of one core)</th><th>Memory (RSS)</th><th>Connections</th><th>Workers</th><th>Last seen</th></tr></thead>
        <tbody>${nodes.map((n) => {
          const c = connectionsOf(last, n);
          return html`<tr key=${n.id} data-node=${n.id}>
          <td>${n.id}${n.self ? ' (this node)' : ''}</td><td>${n.address ?? ''}</td><td>${n.status}</td><td>${n.version ?? ''}</td>
          <td data-testid=${`uptime-${n.id}`} title=${n.startedAt ? `started ${new Date(n.startedAt).toLocaleString()}` : ''}>${n.uptime !== undefined ? duration(n.uptime) : ''}</td>
          <td>${n.cpuPercent !== undefined ? `${n.cpuPercent} %${n.cpus ? ` (${n.cpus} CPUs)` : ''}` : ''}</td>
          <td>${n.rssBytes !== undefined ? `${megabytes(n.rssBytes)} of ${megabytes(n.totalMemoryBytes)}` : ''}</td>
          <td data-testid=${`connections-${n.id}`}>${c === null ? '' : c.toLocaleString()}</td>
          <td>${n.workers ? `${n.workers.running} of ${n.workers.total}` : ''}</td><td data-testid=${`last-seen-${n.id}`}>${seen(n)}</td>
        </tr>`;
        })}</tbody>
      </table>
    </section>
    <h2>Drain and rebalance</h2>
    <section class="card" data-drain>
      <table>
        <thead><tr><th>Node</th><th>MQTT address</th><th>Connections</th><th>Drain state</th><th>Moved</th><th>Remaining</th></tr></thead>
        <tbody>${(drain?.nodes ?? []).map((l) => html`<tr key=${l.node} data-load=${l.node}>
          <td>${l.node}</td><td>${l.mqtt ?? ''}</td><td>${l.connections}</td><td>${l.state}</td><td>${l.moved}</td><td>${l.remaining}</td>
        </tr>`)}</tbody>
      </table>
      ${self && html`<div data-self-drain>
        <p>This node: <strong data-state>${self.state}</strong>${self.reason ? ` (${self.reason})` : ''}${self.started ? `, started ${new Date(self.started).toLocaleString()}` : ''}${self.finished ? `, finished ${new Date(self.finished).toLocaleString()}` : ''}</p>
        ${self.total > 0 && html`<p><progress max="100" value=${pct}></progress> ${self.moved} of ${self.total} moved, ${self.remaining} remaining, ${self.awaitingHandover} sessions awaiting their new node, ${self.handedOver} handed over, ${self.handoverTimeouts} not claimed in time; ${self.rate} clients/s</p>`}
        ${self.targets.length > 0 && html`<p>Sent to: ${self.targets.map((t) => `${t.node ?? 'server reference'} ${t.address ?? '(none: 0x8B)'}: ${t.moved}`).join('; ')}</p>`}
      </div>`}
      <p>
        <label>Rate (clients/s) <input type="number" min="1" max="100000" placeholder="drain.rate" value=${rate} onInput=${(e) => setRate(e.target.value)} /></label>
        ${' '}<button onClick=${() => act('/api/cluster/drain', 'Drain this node? It accepts no new connection and moves its clients to the other nodes.')} disabled=${self && (self.state === 'draining' || self.state === 'drained')}>Drain this node</button>
        ${' '}<button onClick=${() => act('/api/cluster/drain/cancel')} disabled=${!self || self.state === 'idle'}>Cancel</button>
        ${' '}<button onClick=${() => act('/api/cluster/rebalance')} disabled=${!self || self.state !== 'idle' || (drain?.nodes ?? []).length < 2}>Rebalance the cluster</button>
      </p>
    </section>
  </div>`;
}
