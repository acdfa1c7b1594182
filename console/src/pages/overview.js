// Overview: live charts of the broker (connections, messages in and out per second, drops,
// subscriptions, retained), and the same per endpoint, from the samples the admin server pushes.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { Chart } from '../chart.js';

const html = htm.bind(h);

export function Overview({ live }) {
  const [last, setLast] = useState(live.last);
  useEffect(() => live.on((s) => setLast(s ?? live.last)), []);
  const fmt = (n) => (n === undefined || n === null ? '–' : Math.round(n).toLocaleString());
  return html`<div>
    <section class="stats" aria-label="now">
      <div class="stat"><span>Connections</span><b data-testid="stat-connections">${fmt(last?.connections)}</b></div>
      <div class="stat"><span>Messages in/s</span><b data-testid="stat-in">${fmt(last?.in)}</b></div>
      <div class="stat"><span>Messages out/s</span><b data-testid="stat-out">${fmt(last?.out)}</b></div>
      <div class="stat"><span>Dropped/s</span><b>${fmt(last?.dropped)}</b></div>
      <div class="stat"><span>Subscriptions</span><b>${fmt(last?.subscriptions)}</b></div>
      <div class="stat"><span>Retained</span><b>${fmt(last?.retained)}</b></div>
    </section>
    <p class="muted">Live: ${live.state}; ${live.samples.length} samples kept (the last hour, one a second).</p>
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
  </div>`;
}
