// Topic metrics: per configured topic filter, messages in and out by QoS, dropped, bytes, and
// their rates (GET /api/topic-metrics); a filter added (POST), reset (PUT .../reset) and removed
// (DELETE /api/topic-metrics/:filter). Read again every 2 seconds.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { usePoll } from '../forms.js';

const html = htm.bind(h);

export function TopicMetrics({ user }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      setItems((await api('GET', '/api/topic-metrics')).data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, 2000);
  /** @param {() => Promise<unknown>} call */
  async function act(call) {
    try {
      await call();
      await load();
    } catch (err) {
      setError(err.message);
    }
  }
  const qos = (d) => `${d.qos0} / ${d.qos1} / ${d.qos2}`;
  return html`<div>
    <h2>Topic metrics</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="topic metrics">
      <p class="muted">Messages of each topic filter: in (accepted from publishers), out (written to subscribers), dropped (to no subscriber, or dropped for one); QoS 0 / 1 / 2; bytes of payload; rates per second over the last 30 s, every node summed.</p>
      ${items && items.length === 0 ? html`<p class="muted">No topic filter counted yet.</p>` : html`<table>
        <thead><tr><th>Filter</th><th>In</th><th>In QoS 0/1/2</th><th>In /s</th><th>Out</th><th>Out QoS 0/1/2</th><th>Out /s</th><th>Dropped</th><th>Bytes in</th><th>Bytes out</th><th>Since</th>${canWrite && html`<th></th>`}</tr></thead>
        <tbody>
          ${(items ?? []).map((t) => html`<tr key=${t.filter} data-filter=${t.filter}>
            <td><code>${t.filter}</code>${t.source === 'config' ? html` <span class="muted">(config)</span>` : null}</td>
            <td data-col="in">${t.metrics.messages.in.total}</td><td>${qos(t.metrics.messages.in)}</td><td>${t.metrics.messages.in.rate}</td>
            <td data-col="out">${t.metrics.messages.out.total}</td><td>${qos(t.metrics.messages.out)}</td><td>${t.metrics.messages.out.rate}</td>
            <td data-col="dropped">${t.metrics.messages.dropped.total}</td>
            <td>${t.metrics.bytes.in.total}</td><td>${t.metrics.bytes.out.total}</td>
            <td>${new Date(t.resetAt).toLocaleString()}</td>
            ${canWrite && html`<td>
              <button type="button" onClick=${() => act(() => api('PUT', '/api/topic-metrics/{filter}/reset', {}, { params: { filter: t.filter } }))}>Reset</button>
              ${t.source === 'api' && html` <button type="button" onClick=${() => act(() => api('DELETE', '/api/topic-metrics/{filter}', {}, { params: { filter: t.filter } }))}>Delete</button>`}
            </td>`}
          </tr>`)}
        </tbody>
      </table>`}
    </section>
    ${canWrite && html`<${AddFilter} onSaved=${load} />`}
  </div>`;
}

function AddFilter({ onSaved }) {
  const [error, setError] = useState(null);
  async function submit(ev) {
    ev.preventDefault();
    const f = Object.fromEntries(new FormData(ev.target));
    try {
      await api('POST', '/api/topic-metrics', { filter: String(f.filter) });
      setError(null);
      ev.target.reset();
      onSaved();
    } catch (err) {
      setError(err.field ? `${err.field}: ${err.message}` : err.message);
    }
  }
  return html`<form class="card inline" aria-label="add a topic filter" onSubmit=${submit}>
    <label>Topic filter <input name="filter" required placeholder="sensors/+/temp" /></label>
    <button type="submit">Count it</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}
