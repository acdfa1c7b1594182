// Limits: the inbound rate limits per endpoint (each client's, and all its clients' together on
// this node), with what they throttled, changed through /api/endpoints/update; and the overload
// protection marks, changed through PUT /api/overload/marks. Each page reads its figures again
// every 2 seconds.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { usePoll } from '../forms.js';

const html = htm.bind(h);
const FIELDS = ['messagesPerSecond', 'messagesBurst', 'bytesPerSecond', 'bytesBurst'];
const KINDS = ['messages', 'bytes', 'total_messages', 'total_bytes', 'tenant'];

/** A limit from four inputs (empty: absent); null when no rate is given (no limit). */
function limitOf(values) {
  const out = {};
  for (const f of FIELDS) {
    const s = String(values[f] ?? '').trim();
    if (s !== '') out[f] = Number(s);
  }
  return Object.keys(out).length === 0 ? null : out;
}

function shown(l) {
  if (!l) return 'none';
  const parts = [];
  if (l.messagesPerSecond !== undefined) parts.push(`${l.messagesPerSecond} msg/s (burst ${l.messagesBurst ?? l.messagesPerSecond})`);
  if (l.bytesPerSecond !== undefined) parts.push(`${l.bytesPerSecond} B/s (burst ${l.bytesBurst ?? l.bytesPerSecond})`);
  return parts.join(', ');
}

export function Limits({ user }) {
  const [rows, setRows] = useState(null);
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      setRows((await api('GET', '/api/rate-limits')).data.endpoints);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, 2000);
  return html`<div>
    <h2>Limits</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="rate limits">
      <h3>Inbound rate limits</h3>
      <p class="muted">Per client: each client of the endpoint (an authenticator may give a client its own). Total: all its clients together, on this node. Past a limit the client's reading pauses until its bucket refills: nothing is lost.</p>
      <table>
        <thead><tr><th>Endpoint</th><th>Port</th><th>Per client</th><th>Total</th><th>Limited clients</th><th>Paused now</th><th>Throttled (${KINDS.join(' / ')})</th></tr></thead>
        <tbody>
          ${(rows ?? []).map((e) => html`<tr key=${e.id} data-endpoint=${e.id}>
            <td>${e.id}</td><td>${e.port}</td>
            <td data-testid=${`rate-${e.id}`}>${shown(e.rateLimit)}</td><td data-testid=${`total-${e.id}`}>${shown(e.totalRateLimit)}</td>
            <td>${e.limitedClients}${e.ownLimitClients ? ` (${e.ownLimitClients} own)` : ''}</td><td>${e.pausedNow}</td>
            <td data-testid=${`throttled-${e.id}`}>${KINDS.map((k) => e.throttled[k]).join(' / ')}</td>
          </tr>`)}
        </tbody>
      </table>
    </section>
    ${canWrite && rows && rows.length > 0 && html`<${SetRateLimit} rows=${rows} onSaved=${load} />`}
    <${OverloadMarks} canWrite=${canWrite} />
  </div>`;
}

function SetRateLimit({ rows, onSaved }) {
  const [error, setError] = useState(null);
  const [done, setDone] = useState(null);
  async function submit(ev) {
    ev.preventDefault();
    const f = Object.fromEntries(new FormData(ev.target));
    const port = Number(f.port);
    const which = String(f.which);
    try {
      await api('POST', '/api/endpoints/update', { port, [which]: limitOf(f) });
      setError(null);
      setDone(`saved for port ${port}`);
      onSaved();
    } catch (err) {
      setDone(null);
      setError(err.field ? `${err.field}: ${err.message}` : err.message);
    }
  }
  return html`<form class="card inline" aria-label="set a rate limit" onSubmit=${submit}>
    <label>Endpoint <select name="port">${rows.map((e) => html`<option value=${e.port}>${e.id} (${e.port})</option>`)}</select></label>
    <label>Limit <select name="which"><option value="rateLimit">per client</option><option value="totalRateLimit">total</option></select></label>
    ${FIELDS.map((f) => html`<label>${f} <input name=${f} type="number" min="1" placeholder="none" /></label>`)}
    <button type="submit">Save limit</button>
    <span class="muted">No rate given: no limit.</span>
    ${done && html`<span role="status">${done}</span>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

const MARKS = [
  ['lagHighMs', 'Lag high (ms)'], ['lagLowMs', 'Lag low (ms)'], ['heapHighMB', 'Heap high (MB)'], ['heapLowMB', 'Heap low (MB)'],
  ['rssHighMB', 'RSS high (MB)'], ['rssLowMB', 'RSS low (MB)'], ['sampleMs', 'Sample (ms)'],
];

function OverloadMarks({ canWrite }) {
  const [status, setStatus] = useState(null);
  const [error, setError] = useState(null);
  async function load() {
    try {
      setStatus((await api('GET', '/api/overload')).data);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => { void load(); }, []);
  async function submit(ev) {
    ev.preventDefault();
    const f = new FormData(ev.target);
    const body = { enabled: f.get('enabled') === 'on', shedQos0: f.get('shedQos0') === 'on' };
    for (const [k] of MARKS) body[k] = Number(f.get(k));
    try {
      await api('PUT', '/api/overload/marks', body);
      setError(null);
      await load();
    } catch (err) {
      setError(err.field ? `${err.field}: ${err.message}` : err.message);
    }
  }
  if (!status) return html`<section class="card"><h3>Overload protection</h3>${error && html`<p class="error" role="alert">${error}</p>`}</section>`;
  const m = status.marks;
  return html`<section class="card" aria-label="overload marks">
    <h3>Overload protection</h3>
    <p>State: <b data-testid="limits-overload-state">${status.state}</b>; marks from ${status.source === 'api' ? 'the admin API' : 'the configuration'}.</p>
    ${canWrite
      ? html`<form class="inline" aria-label="overload marks form" onSubmit=${submit}>
          <label><input type="checkbox" name="enabled" defaultChecked=${m.enabled} /> Enabled</label>
          ${MARKS.map(([k, label]) => html`<label>${label} <input name=${k} type="number" min="0" defaultValue=${m[k]} /></label>`)}
          <label><input type="checkbox" name="shedQos0" defaultChecked=${m.shedQos0} /> Shed QoS 0 to slow clients</label>
          <button type="submit">Save marks</button>
        </form>`
      : html`<p>${MARKS.map(([k, label]) => `${label}: ${m[k]}`).join('; ')}</p>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </section>`;
}
