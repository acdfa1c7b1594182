// HTTP publish (a message to the subscribers, through /api/publish) and the retained messages
// (query by filter, delete; their count against limits.maxRetainedMessages, the other retained
// limits and the largest first topic levels, from /mqtt/retain/stats).
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';

const html = htm.bind(h);

export function Messages({ user }) {
  const canWrite = user.role === 'admin';
  return html`<div>
    <h2>Messages</h2>
    ${canWrite && html`<${Publish} />`}
    <${Retained} canWrite=${canWrite} />
  </div>`;
}

function Publish() {
  const [status, setStatus] = useState(null);
  const [error, setError] = useState(null);
  async function submit(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    try {
      await api('POST', '/api/publish', { topic: String(f.get('topic')), payload: String(f.get('payload')), qos: Number(f.get('qos')), retain: f.get('retain') === 'on' });
      setError(null);
      setStatus(`published to ${f.get('topic')}`);
    } catch (err) {
      setStatus(null);
      setError(err.field ? `${err.field}: ${err.message}` : err.message);
    }
  }
  return html`<form class="card inline" onSubmit=${submit} aria-label="publish">
    <label>Topic <input name="topic" required /></label>
    <label>Payload <input name="payload" class="wide" /></label>
    <label>QoS <select name="qos"><option>0</option><option>1</option><option>2</option></select></label>
    <label class="check"><input type="checkbox" name="retain" /> Retain</label>
    <button type="submit">Publish</button>
    ${status && html`<p class="muted" role="status">${status}</p>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function Retained({ canWrite }) {
  const [filter, setFilter] = useState('#');
  const [rows, setRows] = useState([]);
  const [total, setTotal] = useState(0);
  const [stats, setStats] = useState(null);
  const [error, setError] = useState(null);
  async function load(f = filter) {
    try {
      const [r, s] = await Promise.all([api('POST', '/mqtt/retain/query', { topic: f, page: 1, size: 100 }), api('GET', '/mqtt/retain/stats').then((a) => a.data)]);
      setRows(r.data);
      setTotal(r.total ?? r.data.length);
      setStats(s);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  async function remove(topic) {
    try {
      await api('POST', '/mqtt/retain/delete', { topic });
      await load();
    } catch (err) {
      setError(`${topic}: ${err.message}`);
    }
  }
  return html`<section class="card" aria-label="retained messages">
    <h3>Retained messages</h3>
    <form class="inline" role="search" onSubmit=${(e) => { e.preventDefault(); void load(); }}>
      <label>Topic filter <input type="search" value=${filter} onInput=${(e) => setFilter(e.target.value)} /></label>
      <button type="submit">Search</button>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${stats && html`<${RetainedFigures} stats=${stats} />`}
    <p class="muted">${total} retained${total > rows.length ? `, the first ${rows.length} shown` : ''}</p>
    <table>
      <thead><tr><th>Topic</th><th>QoS</th><th>Payload</th><th>Time</th><th></th></tr></thead>
      <tbody>${rows.map((m) => html`<tr key=${m.topic} data-topic=${m.topic}>
        <td>${m.topic}</td><td>${m.qos}</td><td><code>${m.payload.length > 80 ? `${m.payload.slice(0, 80)}…` : m.payload}</code></td>
        <td>${m.time ?? ''}</td>
        <td>${canWrite && html`<button class="danger" onClick=${() => remove(m.topic)}>Delete</button>`}</td>
      </tr>`)}</tbody>
    </table>
  </section>`;
}

/** The retained count against its limit, the other limits, and the largest first levels. */
function RetainedFigures({ stats }) {
  const l = stats.limits;
  const full = l.maxRetainedMessages > 0 && stats.counted >= l.maxRetainedMessages;
  return html`<p class=${full ? 'error' : 'muted'} data-testid="retained-figures">
    <span data-testid="retained-count">${stats.counted}</span> of <span data-testid="retained-limit">${l.maxRetainedMessages || 'no limit'}</span> retained
    (${stats.bytes} bytes)${full ? ', full: new topics are refused' : ''};
    payload at most ${l.maxRetainedPayloadSize ? `${l.maxRetainedPayloadSize} bytes` : 'any size'};
    ${l.retainedDefaultExpiry ? `kept ${l.retainedDefaultExpiry} s without an expiry of their own` : 'kept until replaced without an expiry of their own'}.
    ${stats.levels.length > 0 && html`<br />Largest levels: ${stats.levels.map((v, i) => html`${i > 0 ? ', ' : ''}<span data-level=${v.level ?? '(other)'}>${v.level ?? '(other)'} ${v.count}</span>`)}`}
  </p>`;
}
