// The ban list (/api/banned): bans by client id, username, address or CIDR block, with their
// reason, maker and end; add one, lift one, lift all. Viewers see the list.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, usePoll } from '../forms.js';

const html = htm.bind(h);
const KINDS = [
  ['clientid', 'Client id'],
  ['username', 'Username'],
  ['peerhost', 'Address'],
  ['peerhost_net', 'CIDR block'],
];
const SIZE = 100;

export function Banned({ user }) {
  const [bans, setBans] = useState(/** @type {any} */ ({ data: [], total: 0 }));
  const [page, setPage] = useState(1);
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      setBans(await api('GET', '/api/banned', undefined, { query: { page, size: SIZE } }));
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, 5000);
  useEffect(() => {
    if (page > 1 || bans.page > 1) void load();
  }, [page]);
  async function add(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    /** @type {import('../api-typing').BodyOf<'/api/banned', 'POST'>} */
    const body = { as: /** @type {any} */ (f.get('as')), who: String(f.get('who')).trim() };
    if (f.get('reason')) body.reason = String(f.get('reason'));
    const minutes = Number(f.get('minutes'));
    if (f.get('minutes') !== '' && minutes > 0) body.until = new Date(Date.now() + minutes * 60_000).toISOString();
    if (await attempt('add', setError, () => api('POST', '/api/banned', body), load)) form.reset();
  }
  const lift = (b) => attempt(`${b.as} ${b.who}`, setError, () => api('DELETE', '/api/banned/{as}/{who}', undefined, { params: { as: b.as, who: b.who } }), load);
  async function clear() {
    if (window.confirm(`Lift all ${bans.total} bans?`)) await attempt('lift all', setError, () => api('DELETE', '/api/banned', {}), load);
  }
  const pages = Math.max(1, Math.ceil(bans.total / SIZE));
  return html`<div>
    <h2>Banned</h2>
    <p class="hint">Clients refused at CONNECT before authentication (0x8A Banned; 5 in MQTT 3.1.1) on every node; a ban disconnects the clients it names. Flapping detection adds bans by "flapping".</p>
    ${canWrite && html`<form class="card inline" onSubmit=${add} aria-label="add a ban">
      <label>Kind <select name="as">${KINDS.map(([v, t]) => html`<option value=${v}>${t}</option>`)}</select></label>
      <label>Who <input name="who" required autocomplete="off" placeholder="client id, name, 10.0.0.1, 10.0.0.0/8" /></label>
      <label>Reason <input name="reason" autocomplete="off" /></label>
      <label>Minutes <input name="minutes" type="number" min="1" placeholder="never ends" /></label>
      <button type="submit">Ban</button>
    </form>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card">
      <p>${bans.total} ban${bans.total === 1 ? '' : 's'}
        ${canWrite && bans.total > 0 && html` <button class="danger" onClick=${clear}>Lift all</button>`}</p>
      <table>
        <thead><tr><th>Kind</th><th>Who</th><th>Reason</th><th>By</th><th>Since</th><th>Until</th><th></th></tr></thead>
        <tbody>${bans.data.map((b) => html`<tr key=${`${b.as}:${b.who}`} data-ban=${`${b.as}:${b.who}`}>
          <td>${b.as}</td><td>${b.who}</td><td>${b.reason}</td><td>${b.by}</td><td>${dateOf(b.at)}</td><td>${b.until ? dateOf(b.until) : 'never'}</td>
          <td>${canWrite && html`<button class="danger" aria-label=${`lift the ban of ${b.as} ${b.who}`} onClick=${() => lift(b)}>Lift</button>`}</td>
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
