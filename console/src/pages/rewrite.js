// Topic rewrite: the rules in order with what each rewrote (GET /api/rewrite), added at a position
// (POST /api/rewrite) and removed (DELETE /api/rewrite/:position); and the exclusive subscriptions
// held on this node (GET /api/exclusive). Read again every 2 seconds.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { usePoll } from '../forms.js';

const html = htm.bind(h);

export function Rewrite({ user }) {
  const [status, setStatus] = useState(null);
  const [holders, setHolders] = useState(null);
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      setStatus((await api('GET', '/api/rewrite')).data);
      setHolders((await api('GET', '/api/exclusive')).data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, 2000);
  async function remove(position) {
    try {
      await api('DELETE', '/api/rewrite/{position}', undefined, { params: { position } });
      await load();
    } catch (err) {
      setError(err.message);
    }
  }
  return html`<div>
    <h2>Topic rewrite</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="rewrite rules">
      <h3>Rules</h3>
      <p class="muted">In order: the first rule whose action applies, whose source filter matches the topic and whose regex matches it rewrites it, before the ACL. Rules from ${status?.source === 'api' ? 'the admin API' : 'the configuration'}.</p>
      <table>
        <thead><tr><th>#</th><th>Action</th><th>Source filter</th><th>Regex</th><th>Destination</th><th>Rewritten</th>${canWrite && html`<th></th>`}</tr></thead>
        <tbody>
          ${(status?.rules ?? []).map((r) => html`<tr key=${r.position} data-rule=${r.position}>
            <td>${r.position}</td><td>${r.action}</td><td><code>${r.sourceFilter}</code></td><td><code>${r.regex}</code></td><td><code>${r.destination}</code></td><td>${r.rewritten}</td>
            ${canWrite && html`<td><button type="button" onClick=${() => remove(r.position)}>Delete</button></td>`}
          </tr>`)}
        </tbody>
      </table>
    </section>
    ${canWrite && html`<${AddRule} onSaved=${load} />`}
    <section class="card" aria-label="exclusive subscriptions">
      <h3>Exclusive subscriptions</h3>
      ${holders && !holders.enabled ? html`<p class="muted">Off (mqtt.exclusiveSubscription).</p>` : html`<table>
        <thead><tr><th>Filter</th><th>Held by</th><th>Connected</th></tr></thead>
        <tbody>${(holders?.holders ?? []).map((x) => html`<tr key=${x.filter}><td><code>$exclusive/${x.filter}</code></td><td>${x.clientId}</td><td>${x.connected ? 'yes' : 'no'}</td></tr>`)}</tbody>
      </table>`}
    </section>
  </div>`;
}

function AddRule({ onSaved }) {
  const [error, setError] = useState(null);
  async function submit(ev) {
    ev.preventDefault();
    const f = Object.fromEntries(new FormData(ev.target));
    /** @type {import('../api-typing').BodyOf<'/api/rewrite', 'POST'>} */
    const body = { rule: { action: /** @type {any} */ (f.action), sourceFilter: String(f.sourceFilter), regex: String(f.regex), destination: String(f.destination) } };
    if (String(f.position).trim() !== '') body.position = Number(f.position);
    try {
      await api('POST', '/api/rewrite', body);
      setError(null);
      ev.target.reset();
      onSaved();
    } catch (err) {
      setError(err.field ? `${err.field}: ${err.message}` : err.message);
    }
  }
  return html`<form class="card inline" aria-label="add a rewrite rule" onSubmit=${submit}>
    <label>Action <select name="action"><option>publish</option><option>subscribe</option><option>all</option></select></label>
    <label>Source filter <input name="sourceFilter" required placeholder="x/#" /></label>
    <label>Regex <input name="regex" required placeholder="^x/y/(.+)$" /></label>
    <label>Destination <input name="destination" required placeholder="z/y/$1" /></label>
    <label>Position <input name="position" type="number" min="1" placeholder="last" /></label>
    <button type="submit">Add rule</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}
