// Delayed publish (/api/delayed): the messages held for $delayed/{seconds}/{topic} PUBLISHes,
// earliest due first, filtered by a topic filter; cancel one, or every one matching the filter.
// Viewers see the list.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, usePoll } from '../forms.js';

const html = htm.bind(h);
const SIZE = 100;

export function Delayed({ user }) {
  const [list, setList] = useState({ data: [], total: 0 });
  const [stats, setStats] = useState(null);
  const [page, setPage] = useState(1);
  const [filter, setFilter] = useState('');
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  const query = () => `page=${page}&size=${SIZE}${filter ? `&topic=${encodeURIComponent(filter)}` : ''}`;
  async function load() {
    try {
      const [l, s] = await Promise.all([api('GET', '/api/delayed', undefined, { query: { page, size: SIZE, topic: filter || undefined } }), api('GET', '/api/delayed/stats')]);
      setList(l);
      setStats(s);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, 5000);
  useEffect(() => {
    void load();
  }, [page, filter]);
  function search(e) {
    e.preventDefault();
    setPage(1);
    setFilter(String(new FormData(e.target).get('topic')).trim());
  }
  const cancel = (m) => attempt(`cancel ${m.topic}`, setError, () => api('DELETE', '/api/delayed/{id}', undefined, { params: { id: m.id } }), load);
  async function cancelMatching() {
    const f = filter || '#';
    if (window.confirm(`Cancel the ${list.total} delayed messages matching ${f}?`)) {
      await attempt('cancel', setError, () => api('DELETE', '/api/delayed', undefined, { query: { topic: f } }), load);
    }
  }
  const pages = Math.max(1, Math.ceil(list.total / SIZE));
  return html`<div>
    <h2>Delayed</h2>
    <p class="hint">Messages published to $delayed/{seconds}/{topic}, held until due, then published to {topic}.
      ${stats && ` ${stats.pending} held of at most ${stats.maxMessages}; fired ${stats.fired}, cancelled ${stats.cancelled}, expired ${stats.expired} (this node).`}</p>
    <form class="card inline" onSubmit=${search} aria-label="filter delayed messages">
      <label>Topic filter <input name="topic" autocomplete="off" placeholder="sensors/#" /></label>
      <button type="submit">Show</button>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card">
      <p>${list.total} delayed message${list.total === 1 ? '' : 's'}${filter ? ` matching ${filter}` : ''}
        ${canWrite && list.total > 0 && html` <button class="danger" onClick=${cancelMatching}>Cancel ${filter ? 'matching' : 'all'}</button>`}</p>
      <table>
        <thead><tr><th>Topic</th><th>Due</th><th>QoS</th><th>Retain</th><th>Bytes</th><th>Client</th><th>Received</th><th></th></tr></thead>
        <tbody>${list.data.map((m) => html`<tr key=${m.id} data-delayed=${m.id}>
          <td>${m.topic}</td><td>${dateOf(m.dueAt)}</td><td>${m.qos}</td><td>${m.retain ? 'yes' : ''}</td><td>${m.payloadBytes}</td>
          <td>${m.clientId}${m.username ? ` (${m.username})` : ''}</td><td>${dateOf(m.receivedAt)}</td>
          <td>${canWrite && html`<button class="danger" aria-label=${`cancel the delayed message to ${m.topic}`} onClick=${() => cancel(m)}>Cancel</button>`}</td>
        </tr>`)}</tbody>
      </table>
      ${pages > 1 && html`<p>
        <button disabled=${page <= 1} onClick=${() => setPage(page - 1)}>Previous</button>
        page ${page} of ${pages}
        <button disabled=${page >= pages} onClick=${() => setPage(page + 1)}>Next</button></p>`}
    </section>
  </div>`;
}

function dateOf(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}
