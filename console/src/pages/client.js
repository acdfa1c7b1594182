// One client (#/clients/{clientId}, linked from the Connections page): its connection, session,
// in-flight and queued messages against their limits, subscriptions with their options (from
// /mqtt/connection/runtime, refreshed every 2 s while the page is open), and live traffic on its
// subscriptions through Watch (/api/watch, as the Watch page: the server checks each filter
// against the ACL and bounds what it sends). Kick (/mqtt/connection/close), Ban its client id
// (/api/banned, after a confirmation) and Trace it (/api/log/trace/add: its packets in the log).
import { h } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { errText, usePoll } from '../forms.js';
import { Watch, perFrame } from '../watch.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;
/** Messages kept in the live traffic list (newest first). */
const MAX_SHOWN = 100;
/** Filters one Watch socket may hold (the server's MAX_FILTERS). */
const MAX_FILTERS = 10;
const PAYLOAD_CHARS = 120;
const TRACE_SECONDS = 600;

/** The client id in the address (#/clients/{clientId}), or ''. */
export function clientIdOf(hash) {
  const m = /^#\/?clients\/(.+)$/.exec(hash);
  if (!m) return '';
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return m[1];
  }
}

/** The address of a client's page. */
export function clientHref(clientId) {
  return `#/clients/${encodeURIComponent(clientId)}`;
}

const VERSIONS = { 3: '3.1', 4: '3.1.1', 5: '5.0' };

export function ClientPage({ user }) {
  const [clientId, setClientId] = useState(clientIdOf(location.hash));
  useEffect(() => {
    const onHash = () => setClientId(clientIdOf(location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  if (!clientId) return html`<${Pick} />`;
  return html`<${Client} key=${clientId} clientId=${clientId} canWrite=${user.role === 'admin'} />`;
}

/** No client in the address: ask for one. */
function Pick() {
  const [id, setId] = useState('');
  return html`<div>
    <h2>Client</h2>
    <form class="card inline" onSubmit=${(e) => { e.preventDefault(); if (id.trim()) location.hash = clientHref(id.trim()); }}>
      <label>Client id <input name="clientId" value=${id} onInput=${(e) => setId(e.target.value)} required /></label>
      <button type="submit">Show</button>
    </form>
    <p class="muted">Or open a client from the <a href="#/connections">Connections</a> page.</p>
  </div>`;
}

function Client({ clientId, canWrite }) {
  const [rt, setRt] = useState(null);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState(null);
  const [gone, setGone] = useState(false);
  async function load() {
    try {
      setRt((await api('POST', '/mqtt/connection/runtime', { clientId })).data);
      setError(null);
      setGone(false);
    } catch (err) {
      if (err.status === 404) setGone(true);
      else setError(errText('', err));
    }
  }
  usePoll(load, REFRESH_MS);
  async function act(what, confirmText, call) {
    if (confirmText && !window.confirm(confirmText)) return;
    try {
      const r = await call();
      setNotice(r);
      setError(null);
      await load();
    } catch (err) {
      setError(errText(what, err));
    }
  }
  const kick = () => act('kick', null, async () => {
    await api('POST', '/mqtt/connection/close', { clientId });
    return `${clientId} kicked: disconnected and its session ended.`;
  });
  const ban = () => act('ban', `Ban client id ${clientId}? It is disconnected and refused at every CONNECT (0x8A Banned) until the ban is removed on the Banned page.`, async () => {
    await api('POST', '/api/banned', { as: 'clientid', who: clientId, reason: 'banned from the console client page' });
    return `Client id ${clientId} banned (see the Banned page).`;
  });
  const trace = () => act('trace', null, async () => {
    const r = await api('POST', '/api/log/trace/add', { clientId, duration: TRACE_SECONDS });
    return `Tracing ${clientId} until ${new Date(r.data?.endTime ?? Date.now() + TRACE_SECONDS * 1000).toLocaleTimeString()}: every packet of its connection is logged (see the Logs page).`;
  });
  return html`<div>
    <h2>Client <code data-testid="client-id">${clientId}</code></h2>
    <p class="inline-bar">
      <a href="#/connections">← Connections</a>
      ${canWrite && html`
        <button class="danger" onClick=${kick} disabled=${gone}>Kick</button>
        <button class="danger" onClick=${ban}>Ban</button>
        <button onClick=${trace}>Trace</button>`}
    </p>
    ${notice && html`<p class="notice" role="status">${notice}</p>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${gone && html`<p class="muted" data-testid="client-gone">No session of ${clientId} on any node: it is not connected and has no persistent session.</p>`}
    ${rt && !gone && html`<${Details} rt=${rt} />`}
    ${rt && !gone && html`<${Traffic} filters=${rt.subscriptions.map((s) => s.topic)} />`}
  </div>`;
}

function Row({ label, children }) {
  return html`<tr><th scope="row">${label}</th><td>${children}</td></tr>`;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : '–');
const num = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString());

/** "n of max", with a meter when there is a limit. */
function Used({ n, max, testId }) {
  return html`<span data-testid=${testId}>${num(n)} of ${max ? num(max) : 'no limit'}</span>${max ? html` <meter min="0" max=${max} value=${n} high=${max * 0.8}></meter>` : null}`;
}

function Details({ rt }) {
  const connected = rt.connected;
  return html`<div>
  <div class="grid">
    <section class="card" aria-label="connection">
      <h3>Connection: <span data-testid="client-state">${connected ? 'connected' : 'offline'}</span></h3>
      <table><tbody>
        ${connected ? html`
          <${Row} label="Address">${rt.ip}:${rt.port}${rt.proxy ? ` (via ${rt.proxy.address}:${rt.proxy.port}, PROXY v${rt.proxy.version})` : ''}<//>
          <${Row} label="Protocol">MQTT ${VERSIONS[rt.protocolVersion] ?? rt.protocolVersion}<//>
          <${Row} label="Keepalive">${rt.keepalive} s<//>
          <${Row} label="Endpoint">${rt.endpoint}${rt.endpointPort ? ` (port ${rt.endpointPort}, ${rt.transport})` : ''}<//>
          <${Row} label="TLS"><span data-testid="client-tls">${rt.tls ? `yes${rt.clientCertificate ? ', with a client certificate' : ''}` : 'no'}</span><//>
          <${Row} label="Connected at">${when(rt.connectedAt)}<//>
          <${Row} label="Last activity">${when(rt.lastActivity)}<//>` : html`
          <${Row} label="Disconnected at">${when(rt.disconnectedAt)}<//>`}
        <${Row} label="Username">${rt.username ?? '–'}<//>
        <${Row} label="Worker">${rt.worker}${rt.node ? ` on node ${rt.node}` : ''}<//>
        ${connected && html`<${Row} label="Messages in">${num(rt.messagesIn)} (${num(rt.bytesIn)} bytes)<//>
        <${Row} label="Messages out">${num(rt.messagesOut)} (${num(rt.bytesOut)} bytes)<//>`}
      </tbody></table>
    </section>
    <section class="card" aria-label="session">
      <h3>Session</h3>
      <table><tbody>
        <${Row} label="Expiry interval">${rt.sessionExpiryInterval === 0 ? '0 (ends with the connection)' : rt.sessionExpiryInterval >= 4294967295 ? 'never expires' : `${num(rt.sessionExpiryInterval)} s`}<//>
        <${Row} label="Clean start">${rt.cleanStart === null ? '–' : rt.cleanStart ? 'yes' : 'no'}<//>
        <${Row} label="Will">${rt.will ? 'set' : 'none'}<//>
        <${Row} label="In flight"><${Used} n=${rt.inflight} max=${rt.inflightMax} testId="client-inflight" /> <span class="muted">sent, not acknowledged</span><//>
        <${Row} label="Queued"><${Used} n=${rt.queued} max=${rt.queueMax} testId="client-queued" /> <span class="muted">waiting to be sent</span><//>
        <${Row} label="Awaiting PUBREL">${num(rt.awaitingPubrel)} <span class="muted">QoS 2 received</span><//>
      </tbody></table>
    </section>
  </div>
    <section class="card" aria-label="subscriptions">
      <h3>Subscriptions (${rt.subscriptions.length})</h3>
      <table>
        <thead><tr><th>Filter</th><th>QoS</th><th>No Local</th><th>Retain As Published</th><th>Retain Handling</th><th>Subscription id</th></tr></thead>
        <tbody>${rt.subscriptions.map((s) => html`<tr key=${s.topic} data-filter=${s.topic}>
          <td><code>${s.topic}</code></td><td>${s.qos}</td><td>${s.noLocal ? 'yes' : 'no'}</td><td>${s.retainAsPublished ? 'yes' : 'no'}</td><td>${s.retainHandling}</td><td>${s.subscriptionId ?? ''}</td>
        </tr>`)}</tbody>
      </table>
      ${rt.subscriptions.length === 0 && html`<p class="muted">No subscriptions.</p>`}
    </section>
  </div>`;
}

/** A shared subscription's messages are watched on its topic filter (a viewer is never a member
 * of a group: that would take the members' messages). */
function watched(filter) {
  const m = /^\$share\/[^/]+\/(.+)$/.exec(filter);
  return m ? m[1] : filter;
}

/** Live messages on the client's subscriptions, through one Watch socket. */
function Traffic({ filters }) {
  const wanted = [...new Set(filters.map(watched))];
  const shown = wanted.slice(0, MAX_FILTERS);
  const key = shown.join('\n');
  const [state, setState] = useState('connecting');
  const [view, setView] = useState({ rows: [], matched: 0, dropped: 0 });
  const [refused, setRefused] = useState([]);
  const ref = useRef({ rows: [], incoming: [], seq: 0, matched: 0, dropped: 0, on: new Set(), watch: null, want: shown });
  ref.current.want = shown;
  useEffect(() => {
    const r = ref.current;
    const render = perFrame(() => {
      if (r.incoming.length > 0) {
        r.rows = r.incoming.reverse().concat(r.rows).slice(0, MAX_SHOWN);
        r.incoming = [];
      }
      setView({ rows: r.rows, matched: r.matched, dropped: r.dropped });
    });
    const onFrame = (f) => {
      if (f.t === 'messages') {
        r.matched = f.matched;
        r.dropped = f.dropped;
        for (const m of f.items) {
          m.key = ++r.seq;
          r.incoming.push(m);
        }
        if (r.incoming.length > MAX_SHOWN) r.incoming.splice(0, r.incoming.length - MAX_SHOWN);
        render();
      } else if (f.t === 'subscribed') r.on.add(f.filter);
      else if (f.t === 'unsubscribed') r.on.delete(f.filter);
      else if (f.t === 'refused' || f.t === 'error') setRefused((x) => [...x.slice(-4), f.filter ? `${f.filter}: ${f.message}` : f.message]);
    };
    const onState = (s) => {
      setState(s);
      if (s === 'open') {
        r.on.clear();
        for (const f of r.want) r.watch.send({ t: 'subscribe', filter: f });
      }
    };
    r.watch = new Watch(onFrame, onState);
    r.watch.start();
    return () => r.watch.stop();
  }, []);
  // The client's subscriptions changed: watch what it has now.
  useEffect(() => {
    const r = ref.current;
    for (const f of [...r.on]) if (!shown.includes(f)) r.watch?.send({ t: 'unsubscribe', filter: f });
    for (const f of shown) if (!r.on.has(f)) r.watch?.send({ t: 'subscribe', filter: f });
  }, [key]);
  return html`<section class="card" aria-label="live traffic">
    <h3>Live traffic on its subscriptions</h3>
    <p class="muted">Messages published from now on to this client's subscription filters (by any publisher, this client included), as the Watch page shows them: ${state === 'open' ? 'connected' : state === 'closed' ? 'disconnected: reconnecting…' : 'connecting…'}.${' '}
      ${wanted.length > MAX_FILTERS ? ` Only the first ${MAX_FILTERS} of its ${wanted.length} filters are watched.` : ''}
      ${' '}<b data-testid="traffic-matched">${view.matched}</b> matched, ${view.dropped} dropped by the server's bound.</p>
    ${refused.map((m) => html`<p class="error" role="alert">${m}</p>`)}
    ${shown.length === 0 ? html`<p class="muted">No subscription: nothing to watch.</p>` : html`<div class="scroll short">
      <table class="messages">
        <thead><tr><th>Time</th><th>Topic</th><th>QoS</th><th>Retain</th><th>Size</th><th>Payload</th></tr></thead>
        <tbody>${view.rows.map((m) => html`<tr key=${m.key} data-topic=${m.topic}>
          <td>${new Date(m.time).toLocaleTimeString()}</td><td>${m.topic}</td><td>${m.qos}</td><td>${m.retain ? 'yes' : ''}</td><td>${m.size}</td>
          <td class="payload"><code>${m.encoding === 'base64' ? 'base64: ' : ''}${m.payload.length > PAYLOAD_CHARS ? `${m.payload.slice(0, PAYLOAD_CHARS)}…` : m.truncated ? `${m.payload}…` : m.payload}</code></td>
        </tr>`)}</tbody>
      </table>
    </div>`}
  </section>`;
}
