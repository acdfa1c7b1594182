// Node figures shared by the Cluster page and the Overview: every node's version, uptime, CPU,
// memory and last seen from /api/cluster/nodes (this node sampled at the request, the others as
// their last heartbeat said, within a second), read every 2 s while the page is open; connections
// per node from the live samples (/api/live), the same figure the Overview's charts draw.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

/** The nodes of /api/cluster/nodes, refreshed while mounted: [nodes, error]. */
export function useNodes() {
  const [nodes, setNodes] = useState([]);
  const [error, setError] = useState(null);
  useEffect(() => {
    const load = () => api('GET', '/api/cluster/nodes').then((r) => { setNodes(r.data); setError(null); }, (err) => setError(err.message));
    void load();
    const t = setInterval(load, REFRESH_MS);
    return () => clearInterval(t);
  }, []);
  return [nodes, error];
}

/** "3 d 4 h", "5 h 2 min", "12 min 3 s", "40 s". */
export function duration(seconds) {
  if (seconds === undefined || seconds === null) return '';
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400);
  const hr = Math.floor((s % 86400) / 3600);
  const min = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d} d ${hr} h`;
  if (hr > 0) return `${hr} h ${min} min`;
  if (min > 0) return `${min} min ${s % 60} s`;
  return `${s} s`;
}

export function megabytes(n) {
  return n === undefined || n === null ? '' : `${Math.round(n / 1048576).toLocaleString()} MB`;
}

/** A node's connections from the newest live sample (null: not in it). */
export function connectionsOf(last, node) {
  if (!last) return null;
  if (!last.nodes) return node.self ? last.connections : null;
  return last.nodes.find((n) => n.node === node.id)?.connections ?? null;
}

/** Last seen: this node now; another "n s ago" by its last heartbeat. */
export function seen(node) {
  if (!node.lastSeen) return '';
  if (node.self) return 'now';
  const ago = Math.max(0, Math.round((Date.now() - Date.parse(node.lastSeen)) / 1000));
  return `${ago} s ago (${new Date(node.lastSeen).toLocaleTimeString()})`;
}

/** The table of node figures. */
export function NodeFigures({ nodes, last, label = 'node figures' }) {
  const fmt = (n) => (n === null || n === undefined ? '–' : Math.round(n).toLocaleString());
  return html`<table aria-label=${label}>
    <thead><tr><th>Node</th><th>State</th><th>Version</th><th>Uptime</th><th>CPU (of one core)</th><th>Memory (RSS)</th><th>Connections</th><th>Last seen</th></tr></thead>
    <tbody>${nodes.map((n) => html`<tr key=${n.id} data-node-figures=${n.id}>
      <td>${n.id}${n.self ? ' (this node)' : ''}</td><td>${n.status}</td><td>${n.version ?? '–'}</td>
      <td data-testid=${`uptime-${n.id}`} title=${n.startedAt ? `started ${new Date(n.startedAt).toLocaleString()}` : ''}>${n.uptime !== undefined ? duration(n.uptime) : '–'}</td>
      <td>${n.cpuPercent !== undefined ? `${n.cpuPercent} %${n.cpus ? ` (${n.cpus} CPUs)` : ''}` : '–'}</td>
      <td>${n.rssBytes !== undefined ? `${megabytes(n.rssBytes)} of ${megabytes(n.totalMemoryBytes)}` : '–'}</td>
      <td>${fmt(connectionsOf(last, n))}</td>
      <td data-testid=${`last-seen-${n.id}`}>${seen(n)}</td>
    </tr>`)}</tbody>
  </table>`;
}
