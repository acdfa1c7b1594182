// Endpoints: the listeners (list with live counters, add with TLS, TLS-PSK, certificate revocation
// and PROXY protocol, change limits, remove), through /api/endpoints/* (variant B: by port); what
// the TLS endpoints staple from /api/tls/ocsp-staples.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';

const html = htm.bind(h);

/** The sslConfig of the add form's TLS fields (undefined: no TLS): a certificate and key, TLS-PSK,
 * or both, with client certificates and revocation checks. */
function sslConfigOf(f) {
  const text = (name) => String(f.get(name) ?? '').trim();
  const ssl = {};
  if (text('cert') !== '') ssl.cert = text('cert');
  if (text('key') !== '') ssl.key = text('key');
  const psk = {};
  if (text('pskFile') !== '') psk.file = text('pskFile');
  if (f.get('pskFromClientDb') === 'on') psk.fromClientDb = true;
  if (text('pskIdentityHint') !== '') psk.identityHint = text('pskIdentityHint');
  if (f.get('pskIdentityAsUsername') === 'on') psk.identityAsUsername = true;
  if (Object.keys(psk).length > 0) ssl.psk = psk;
  if (Object.keys(ssl).length === 0) return undefined;
  if (text('ca') !== '') ssl.ca = text('ca');
  if (f.get('requestCert') === 'on') {
    ssl.requestCert = true;
    ssl.rejectUnauthorized = true;
  }
  if (text('crl') !== '') ssl.crl = text('crl');
  if (f.get('ocspStapling') === 'on') {
    ssl.ocspStapling = { enabled: true };
    if (text('stapleResponder') !== '') ssl.ocspStapling.responderUrl = text('stapleResponder');
  }
  if (f.get('ocspClientCheck') === 'on') {
    ssl.ocspClientCheck = { enabled: true, failMode: text('failMode') || 'closed' };
    if (text('checkResponder') !== '') ssl.ocspClientCheck.responderUrl = text('checkResponder');
  }
  return ssl;
}

/** What a row shows of an endpoint's TLS: certificate or PSK, revocation checks, the staple's state. */
function tlsSummary(e, staple) {
  const ssl = e.sslConfig;
  if (!ssl) return 'no';
  const parts = [e.useWebsocket ? 'WSS' : 'TLS'];
  if (ssl.psk) parts.push(`PSK (${[ssl.psk.file && 'file', ssl.psk.fromClientDb && 'client database'].filter(Boolean).join(', ')})`);
  if (ssl.cert && ssl.psk) parts.push('certificate');
  if (ssl.requestCert) parts.push('client certificates');
  if (ssl.crl) parts.push('CRL');
  if (ssl.ocspClientCheck?.enabled) parts.push(`OCSP check (fail ${ssl.ocspClientCheck.failMode ?? 'closed'})`);
  if (ssl.ocspStapling?.enabled) parts.push(`OCSP staple: ${staple ? (staple.stapled ? `${staple.certStatus} until ${staple.nextUpdate ?? '–'}` : staple.state) : '–'}`);
  return parts.join(' · ');
}

/** A limit field: empty is "no limit" (null), else a whole number. */
function limit(v) {
  const s = String(v ?? '').trim();
  return s === '' ? null : Number(s);
}

export function Endpoints({ live, user }) {
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const [counters, setCounters] = useState(new Map());
  const [staples, setStaples] = useState(new Map());
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const r = await api('GET', '/api/endpoints/list');
      setList(Object.values(r.data.endpoints).map((e) => ({ ...e, running: r.data.activePorts.includes(e.port) })));
      const s = await api('GET', '/api/tls/ocsp-staples');
      setStaples(new Map(s.data.map((x) => [x.endpoint, x])));
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
          ${(list ?? []).map((e) => html`<${EndpointRow} key=${e.port} e=${e} c=${counters.get(e.port)} staple=${staples.get(e.id)} canWrite=${canWrite} onChanged=${load} />`)}
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
      // The API's message names its field already ("sslConfig.crl: no such file ...").
      setError(err.field && !err.message.startsWith(err.field) ? `${err.field}: ${err.message}` : err.message);
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
    <details class="tls-fields">
      <summary>TLS: certificate, revocation, TLS-PSK</summary>
      <div class="tls-grid">
      <label>Certificate <input name="cert" placeholder="PEM file path" /></label>
      <label>Key <input name="key" placeholder="PEM file path" /></label>
      <label>CA <input name="ca" placeholder="PEM file path" /></label>
      <label class="check"><input name="requestCert" type="checkbox" /> Require client certificates</label>
      <label>CRL <input name="crl" placeholder="CRL file path (PEM or DER)" /></label>
      <label class="check"><input name="ocspStapling" type="checkbox" /> OCSP stapling</label>
      <label>Staple responder <input name="stapleResponder" placeholder="from the certificate (AIA)" /></label>
      <label class="check"><input name="ocspClientCheck" type="checkbox" /> OCSP check of client certificates</label>
      <label>Responder down <select name="failMode"><option value="closed">refuse (closed)</option><option value="open">admit (open)</option></select></label>
      <label>Check responder <input name="checkResponder" placeholder="from each certificate (AIA)" /></label>
      <label>PSK file <input name="pskFile" placeholder="Mosquitto psk_file path" autocomplete="off" /></label>
      <label>PSK hint (TLS 1.2) <input name="pskIdentityHint" autocomplete="off" /></label>
      <label class="check"><input name="pskFromClientDb" type="checkbox" /> PSK keys of the client database</label>
      <label class="check" title="the PSK identity is the client's username, its key the credential"><input name="pskIdentityAsUsername" type="checkbox" /> Username from the PSK</label>
      </div>
    </details>
    <button type="submit">Add endpoint</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function EndpointRow({ e, c, staple, canWrite, onChanged }) {
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
    <td class="tls">${tlsSummary(e, staple)}</td>
    <td>${canWrite && html`<button class="danger" onClick=${() => call('/api/endpoints/remove', { port: e.port })}>Remove</button>`}
      ${error && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>`;
}
