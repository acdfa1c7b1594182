// Cluster nodes: every node this one knows, with its state (refreshed every 5 s while open).
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';

const html = htm.bind(h);

export function Cluster() {
  const [nodes, setNodes] = useState([]);
  const [error, setError] = useState(null);
  async function load() {
    try {
      setNodes((await api('GET', '/api/cluster/nodes')).data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
    const t = setInterval(load, 5000);
    return () => clearInterval(t);
  }, []);
  return html`<div>
    <h2>Cluster nodes</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card">
      <table>
        <thead><tr><th>Node</th><th>Address</th><th>State</th><th>Version</th><th>Started</th><th>Workers</th><th>Last seen</th></tr></thead>
        <tbody>${nodes.map((n) => html`<tr key=${n.id} data-node=${n.id}>
          <td>${n.id}${n.self ? ' (this node)' : ''}</td><td>${n.address ?? ''}</td><td>${n.status}</td><td>${n.version ?? ''}</td>
          <td>${n.startedAt ? new Date(n.startedAt).toLocaleString() : ''}</td>
          <td>${n.workers ? `${n.workers.running} of ${n.workers.total}` : ''}</td><td>${n.lastSeen ? new Date(n.lastSeen).toLocaleString() : ''}</td>
        </tr>`)}</tbody>
      </table>
    </section>
  </div>`;
}
