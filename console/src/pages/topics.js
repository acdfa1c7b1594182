// Topics and subscriptions: the subscribed filters (every session, online or offline) with their
// subscriber counts, and the clients subscribed to one filter.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';

const html = htm.bind(h);

export function Topics() {
  const [filter, setFilter] = useState('');
  const [result, setResult] = useState(null);
  const [clients, setClients] = useState(null);
  const [error, setError] = useState(null);
  async function load(f = filter) {
    try {
      setResult(await api('POST', '/topic/query', f.trim() ? { topic: f.trim(), page: 1, size: 200 } : { page: 1, size: 200 }));
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  async function show(topic) {
    try {
      setClients({ topic, ...(await api('POST', '/topic/connect/query', { topic, page: 1, size: 200 })) });
      setError(null);
    } catch (err) {
      setError(`${topic}: ${err.message}`);
    }
  }
  return html`<div>
    <h2>Topics and subscriptions</h2>
    <form class="card inline" role="search" onSubmit=${(e) => { e.preventDefault(); void load(); }}>
      <label>Topic filter <input type="search" value=${filter} onInput=${(e) => setFilter(e.target.value)} placeholder="every subscribed filter" /></label>
      <button type="submit">Search</button>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="subscribed filters">
      <p class="muted" data-testid="topics-total">${result?.total ?? 0} subscribed filters: ${result?.subscriptions ?? 0} subscriptions (+${result?.sysSubscriptions ?? 0} $SYS) of client sessions of every node, online or offline; the broker's internal subscriptions are not listed</p>
      <table>
        <thead><tr><th>Filter</th><th>Subscribers</th><th>Newest retained</th></tr></thead>
        <tbody>${(result?.data ?? []).map((t) => html`<tr key=${t.topic} data-filter=${t.topic}>
          <td><button class="link" onClick=${() => show(t.topic)}>${t.topic}</button></td><td>${t.subscribers}</td>
          <td>${t.lastMessage ? html`<code>${t.lastMessage.topic ?? ''} ${String(t.lastMessage.payload ?? '').slice(0, 60)}</code>` : ''}</td>
        </tr>`)}</tbody>
      </table>
    </section>
    ${clients && html`<section class="card" aria-label=${`subscribers of ${clients.topic}`}>
      <h3>Subscribers of ${clients.topic} <button class="link" onClick=${() => setClients(null)}>close</button></h3>
      <table>
        <thead><tr><th>Client id</th><th>Online</th><th>QoS</th><th>No Local</th><th>Retain As Published</th><th>Retain Handling</th></tr></thead>
        <tbody>${clients.data.map((c) => html`<tr key=${c.clientId} data-client=${c.clientId}>
          <td>${c.clientId}</td><td>${c.connected ? 'yes' : 'no'}</td><td>${c.qos}</td><td>${c.noLocal ? 'yes' : 'no'}</td>
          <td>${c.retainAsPublished ? 'yes' : 'no'}</td><td>${c.retainHandling}</td>
        </tr>`)}</tbody>
      </table>
    </section>`}
  </div>`;
}
