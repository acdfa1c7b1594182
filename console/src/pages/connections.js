// Connections: search the connected clients, open one's page (pages/client.js: connection,
// session, subscriptions, live traffic), close or take one down.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt } from '../forms.js';
import { clientHref } from './client.js';

const html = htm.bind(h);
const PAGE_SIZE = 50;

export function Connections({ user }) {
  const [query, setQuery] = useState('');
  const [page, setPage] = useState(1);
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load(q = query, p = page) {
    try {
      const body = { page: p, size: PAGE_SIZE };
      if (q.trim() !== '') body.clientId = q.trim();
      const r = await api('POST', '/mqtt/connection', body);
      setResult(r);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  const act = (path, clientId) => attempt(clientId, setError, () => api('POST', path, { clientId }), load);
  const rows = result?.data ?? [];
  const total = result?.total ?? rows.length;
  return html`<div>
    <h2>Connections</h2>
    <form class="card inline" role="search" onSubmit=${(e) => { e.preventDefault(); setPage(1); void load(query, 1); }}>
      <label>Client id <input type="search" name="clientId" value=${query} onInput=${(e) => setQuery(e.target.value)} placeholder="part of a client id" /></label>
      <button type="submit">Search</button>
      <button type="button" onClick=${() => load()}>Refresh</button>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card">
      <p class="muted" data-testid="connections-total">${total} connection${total === 1 ? '' : 's'} (clients connected now${result?.nodesMissing ? ', every node' : ''}; offline sessions are not listed)${total > PAGE_SIZE ? `, page ${page}` : ''}</p>
      <table>
        <thead><tr><th>Client id</th><th>Username</th><th>Address</th><th>Endpoint</th><th>Protocol</th><th>Connected</th>${rows.some((c) => c.node) ? html`<th>Node</th>` : null}<th></th></tr></thead>
        <tbody>${rows.map((c) => html`<tr key=${c.clientId} data-client=${c.clientId}>
          <td><a href=${clientHref(c.clientId)}>${c.clientId}</a></td>
          <td>${c.username ?? ''}</td><td>${c.ip}:${c.port}</td><td>${c.endpoint} (${c.endpointPort}, ${c.transport})</td>
          <td>${c.protocolVersion === 5 ? '5.0' : c.protocolVersion === 4 ? '3.1.1' : '3.1'}</td><td>${new Date(c.connectTime).toLocaleString()}</td>
          ${c.node ? html`<td>${c.node}</td>` : null}
          <td>${canWrite && html`<button class="danger" onClick=${() => act('/mqtt/connection/close', c.clientId)}>Close</button>
            <button onClick=${() => act('/mqtt/connection/down', c.clientId)}>Down</button>`}</td>
        </tr>`)}</tbody>
      </table>
      ${total > PAGE_SIZE && html`<p>
        <button disabled=${page <= 1} onClick=${() => { setPage(page - 1); void load(query, page - 1); }}>Previous</button>
        <button disabled=${page * PAGE_SIZE >= total} onClick=${() => { setPage(page + 1); void load(query, page + 1); }}>Next</button></p>`}
    </section>
  </div>`;
}
