// Slow subscribers: the clients whose QoS 1/2 deliveries took the longest, per client and topic
// (GET /api/slow-subscriptions), cleared (DELETE), and the settings (GET/PUT
// /api/slow-subscriptions/settings). Read again every 2 seconds.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { usePoll } from '../forms.js';

const html = htm.bind(h);

export function SlowSubs({ user }) {
  const [top, setTop] = useState(null);
  const [settings, setSettings] = useState(null);
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      setTop((await api('GET', '/api/slow-subscriptions')).data);
      setSettings((await api('GET', '/api/slow-subscriptions/settings')).data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, 2000);
  async function clear() {
    try {
      await api('DELETE', '/api/slow-subscriptions', {});
      await load();
    } catch (err) {
      setError(err.message);
    }
  }
  const measures = { whole: 'received to acknowledged', internal: 'received to sent (queue time)', response: 'sent to acknowledged' };
  return html`<div>
    <h2>Slow subscribers</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="slow subscribers">
      ${settings && !settings.enable ? html`<p class="muted">Off: enable it below (or slowSubs.enable in the configuration).</p>` : settings && html`<p class="muted">The ${settings.topK} slowest deliveries per client and topic at or above ${settings.threshold} ms (${measures[settings.statsType]}), over the last ${settings.window} s, on every node.</p>`}
      <table>
        <thead><tr><th>Client</th><th>Topic</th><th>Latency (ms)</th><th>Last seen</th></tr></thead>
        <tbody>
          ${(top ?? []).map((r) => html`<tr key=${`${r.clientId} ${r.topic}`} data-client=${r.clientId}>
            <td>${r.clientId}</td><td><code>${r.topic}</code></td><td data-col="latency">${r.latency}</td><td>${new Date(r.lastUpdate).toLocaleTimeString()}</td>
          </tr>`)}
        </tbody>
      </table>
      ${canWrite && html`<button type="button" onClick=${clear}>Clear</button>`}
    </section>
    ${canWrite && settings && html`<${Settings} settings=${settings} onSaved=${load} />`}
  </div>`;
}

function Settings({ settings, onSaved }) {
  const [error, setError] = useState(null);
  async function submit(ev) {
    ev.preventDefault();
    const f = Object.fromEntries(new FormData(ev.target));
    const body = { enable: f.enable === 'on', threshold: Number(f.threshold), topK: Number(f.topK), window: Number(f.window), statsType: /** @type {'whole' | 'internal' | 'response'} */ (String(f.statsType)) };
    try {
      await api('PUT', '/api/slow-subscriptions/settings', body);
      setError(null);
      onSaved();
    } catch (err) {
      setError(err.field ? `${err.field}: ${err.message}` : err.message);
    }
  }
  return html`<form class="card inline" aria-label="slow subscriber settings" onSubmit=${submit} key=${JSON.stringify(settings)}>
    <label><input name="enable" type="checkbox" defaultChecked=${settings.enable} /> Enabled</label>
    <label>Threshold (ms) <input name="threshold" type="number" min="0" defaultValue=${settings.threshold} /></label>
    <label>Top N <input name="topK" type="number" min="1" max="1000" defaultValue=${settings.topK} /></label>
    <label>Window (s) <input name="window" type="number" min="1" defaultValue=${settings.window} /></label>
    <label>Measure <select name="statsType">${['whole', 'internal', 'response'].map((t) => html`<option selected=${settings.statsType === t}>${t}</option>`)}</select></label>
    <button type="submit">Save</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}
