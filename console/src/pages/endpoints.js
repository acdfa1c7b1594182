// Endpoints: the listeners (list with live counters, add with TLS and TLS-PSK, change limits,
// remove), through /api/endpoints/* (variant B: by port).
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { errText } from '../forms.js';

const html = htm.bind(h);

/** A limit field: empty is "no limit" (null), else a whole number. */
function limit(v) {
  const s = String(v ?? '').trim();
  return s === '' ? null : Number(s);
}

/** What an endpoint's TLS is, for its row. */
function tlsKind(ssl) {
  if (!ssl) return '–';
  const psk = ssl.psk ? `PSK (${[ssl.psk.file && 'file', ssl.psk.fromClientDb && 'client database'].filter(Boolean).join(', ')})` : '';
  return ssl.cert && psk ? `certificate + ${psk}` : ssl.cert ? 'certificate' : psk;
}

/** The sslConfig of the add form (undefined: no TLS): a certificate and key, TLS-PSK, or both. */
function sslConfigOf(f) {
  const text = (k) => String(f.get(k) ?? '').trim();
  const ssl = {};
  if (text('cert')) ssl.cert = text('cert');
  if (text('key')) ssl.key = text('key');
  const psk = {};
  if (text('pskFile')) psk.file = text('pskFile');
  if (f.get('pskFromClientDb')) psk.fromClientDb = true;
  if (text('pskIdentityHint')) psk.identityHint = text('pskIdentityHint');
  if (f.get('pskIdentityAsUsername')) psk.identityAsUsername = true;
  if (Object.keys(psk).length > 0) ssl.psk = psk;
  return Object.keys(ssl).length > 0 ? ssl : undefined;
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
        <thead><tr><th>Id</th><th>Port</th><th>State</th><th>Connections</th><th>In/s</th><th>Out/s</th><th>Max connections</th><th>TLS</th><th></th></tr></thead>
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
    const ssl = sslConfigOf(f);
    if (ssl) body.sslConfig = ssl;
    try {
      await api('POST', '/api/endpoints/add', body);
      setError(null);
      form.reset();
      onAdded();
    } catch (err) {
      setError(errText('', err));
    }
  }
  return html`<form class="card editor" onSubmit=${submit} aria-label="add an endpoint">
    <div class="inline">
      <label>Id <input name="id" placeholder="endpoint-<port>" /></label>
      <label>Port <input name="port" type="number" min="1" max="65535" required /></label>
      <label>Max connections <input name="maxConnectionSize" type="number" min="0" placeholder="no limit" /></label>
    </div>
    <fieldset class="action">
      <legend>TLS (optional: a certificate, TLS-PSK, or both)</legend>
      <div class="inline">
        <label>Certificate (PEM path) <input name="cert" autocomplete="off" /></label>
        <label>Key (PEM path) <input name="key" autocomplete="off" /></label>
        <label>PSK file (Mosquitto psk_file path) <input name="pskFile" autocomplete="off" /></label>
        <label>PSK hint (TLS 1.2) <input name="pskIdentityHint" autocomplete="off" /></label>
        <label class="check"><input name="pskFromClientDb" type="checkbox" /> PSK keys of the client database</label>
        <label class="check" title="the PSK identity is the client's username, its key the credential"><input name="pskIdentityAsUsername" type="checkbox" /> Username from the PSK</label>
      </div>
    </fieldset>
    <div><button type="submit">Add endpoint</button></div>
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
    <td>${e.id}</td><td>${e.port}</td><td>${e.running ? 'running' : 'stopped'}</td>
    <td>${fmt(c?.connections)}</td><td>${fmt(c?.in)}</td><td>${fmt(c?.out)}</td>
    <td>${canWrite
      ? html`<form class="inline" onSubmit=${(ev) => { ev.preventDefault(); void call('/api/endpoints/update', { port: e.port, maxConnectionSize: limit(max) }); }}>
          <input aria-label=${`max connections of ${e.id}`} type="number" min="0" value=${max} placeholder="no limit" onInput=${(ev) => setMax(ev.target.value)} />
          <button type="submit">Save</button></form>`
      : e.maxConnectionSize ?? 'no limit'}</td>
    <td>${tlsKind(e.sslConfig)}</td>
    <td>${canWrite && html`<button class="danger" onClick=${() => call('/api/endpoints/remove', { port: e.port })}>Remove</button>`}
      ${error && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>`;
}
