// Endpoints: the listeners (list with live counters, add, with PROXY protocol if asked, change
// limits, remove), through /api/endpoints/* (variant B: by port).
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';

const html = htm.bind(h);

/** A limit field: empty is "no limit" (null), else a whole number. */
function limit(v) {
  const s = String(v ?? '').trim();
  return s === '' ? null : Number(s);
}

export function Endpoints({ live, user }) {
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const [counters, setCounters] = useState(new Map());
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const r = await api('GET', '/api/endpoints/list');
      setList(Object.values(r.data.endpoints).map((e) => ({ ...e, running: r.data.activePorts.includes(e.port) })));
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
    const off = live.on((s) => {
      if (s) setCounters(new Map(s.endpoints.map((e) => [e.port, e])));
    });
    return off;
  }, []);
  return html`<div>
    <h2>Endpoints</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${canWrite && html`<${AddEndpoint} onAdded=${load} />`}
    <section class="card">
      <table>
        <thead><tr><th>Id</th><th>Port</th><th>State</th><th>Connections</th><th>In/s</th><th>Out/s</th><th>Max connections</th><th></th></tr></thead>
        <tbody>
          ${(list ?? []).map((e) => html`<${EndpointRow} key=${e.port} e=${e} c=${counters.get(e.port)} canWrite=${canWrite} onChanged=${load} />`)}
        </tbody>
      </table>
      ${list && list.length === 0 && html`<p class="muted">No endpoints.</p>`}
    </section>
  </div>`;
}

function AddEndpoint({ onAdded }) {
  const [error, setError] = useState(null);
  async function submit(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    const body = { port: Number(f.get('port')) };
    if (String(f.get('id')).trim() !== '') body.id = String(f.get('id')).trim();
    const max = limit(f.get('maxConnectionSize'));
    if (max !== null) body.maxConnectionSize = max;
    // PROXY protocol: the mode, and the balancers whose headers are taken (comma-separated).
    const proxy = String(f.get('proxyProtocol'));
    if (proxy !== 'off') {
      body.proxyProtocol = proxy;
      body.proxyProtocolTrusted = String(f.get('proxyProtocolTrusted')).split(',').map((t) => t.trim()).filter((t) => t !== '');
    }
    try {
      await api('POST', '/api/endpoints/add', body);
      setError(null);
      form.reset();
      onAdded();
    } catch (err) {
      setError(err.field ? `${err.field}: ${err.message}` : err.message);
    }
  }
  return html`<form class="card inline" onSubmit=${submit} aria-label="add an endpoint">
    <label>Id <input name="id" placeholder="endpoint-<port>" /></label>
    <label>Port <input name="port" type="number" min="1" max="65535" required /></label>
    <label>Max connections <input name="maxConnectionSize" type="number" min="0" placeholder="no limit" /></label>
    <label>PROXY protocol <select name="proxyProtocol">
      <option value="off">off</option><option value="optional">optional</option><option value="required">required</option>
    </select></label>
    <label>Trusted balancers <input name="proxyProtocolTrusted" placeholder="10.0.0.0/8, 127.0.0.1" /></label>
    <button type="submit">Add endpoint</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function EndpointRow({ e, c, canWrite, onChanged }) {
  const [error, setError] = useState(null);
  const [max, setMax] = useState(e.maxConnectionSize ?? '');
  async function call(path, body) {
    try {
      await api('POST', path, body);
      setError(null);
      onChanged();
    } catch (err) {
      setError(err.message);
    }
  }
  const fmt = (n) => (n === undefined ? '–' : Math.round(n).toLocaleString());
  return html`<tr data-port=${e.port}>
    <td>${e.id}${e.proxyProtocol && html` <span class="muted" title=${`PROXY protocol from ${(e.proxyProtocolTrusted ?? []).join(', ')}`}>PROXY ${e.proxyProtocol}</span>`}</td><td>${e.port}</td><td>${e.running ? 'running' : 'stopped'}</td>
    <td>${fmt(c?.connections)}</td><td>${fmt(c?.in)}</td><td>${fmt(c?.out)}</td>
    <td>${canWrite
      ? html`<form class="inline" onSubmit=${(ev) => { ev.preventDefault(); void call('/api/endpoints/update', { port: e.port, maxConnectionSize: limit(max) }); }}>
          <input aria-label=${`max connections of ${e.id}`} type="number" min="0" value=${max} placeholder="no limit" onInput=${(ev) => setMax(ev.target.value)} />
          <button type="submit">Save</button></form>`
      : e.maxConnectionSize ?? 'no limit'}</td>
    <td>${canWrite && html`<button class="danger" onClick=${() => call('/api/endpoints/remove', { port: e.port })}>Remove</button>`}
      ${error && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>`;
}
