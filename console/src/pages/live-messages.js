// The live message view: subscribe to topic filters from the browser and watch the messages
// arrive, through the admin server (/api/watch; no MQTT connection from the page). The server
// checks each filter against the broker's ACL as the signed-in user's subscribe (a refusal is
// shown on the form) and bounds what it sends (a budget per page; what is over it is dropped and
// counted, and the count is shown here). The page keeps the newest MAX_SHOWN messages and renders
// at most once per animation frame, so a busy topic cannot freeze it.
import { h } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';

import { Watch, perFrame } from '../watch.js';

const html = htm.bind(h);
/** Messages kept in the list (newest first). */
export const MAX_SHOWN = 200;
/** Characters of a payload shown in the list (the server sends at most 1 KiB of it). */
const PAYLOAD_CHARS = 120;

export function LiveMessages() {
  const [filter, setFilter] = useState('');
  const [filters, setFilters] = useState([]);
  const [error, setError] = useState(null);
  const [state, setState] = useState('connecting');
  const [view, setView] = useState({ rows: [], matched: 0, dropped: 0 });
  const [paused, setPaused] = useState(false);
  const ref = useRef({ rows: [], incoming: [], matched: 0, dropped: 0, seq: 0, filters: [], paused: false, watch: null });

  useEffect(() => {
    const r = ref.current;
    // New messages are merged into the list once per frame, not once per socket frame.
    const render = perFrame(() => {
      if (r.incoming.length > 0) {
        const fresh = r.incoming.length > MAX_SHOWN ? r.incoming.slice(-MAX_SHOWN) : r.incoming;
        r.incoming = [];
        r.rows = fresh.reverse().concat(r.rows).slice(0, MAX_SHOWN);
      }
      setView({ rows: r.rows, matched: r.matched, dropped: r.dropped });
    });
    const onFrame = (f) => {
      switch (f.t) {
        case 'messages':
          r.matched = f.matched;
          r.dropped = f.dropped;
          if (!r.paused) {
            for (const m of f.items) {
              m.key = ++r.seq;
              r.incoming.push(m);
            }
            if (r.incoming.length > MAX_SHOWN) r.incoming.splice(0, r.incoming.length - MAX_SHOWN);
          }
          render();
          break;
        case 'subscribed':
          if (!r.filters.includes(f.filter)) r.filters = [...r.filters, f.filter];
          setFilters(r.filters);
          setError(null);
          break;
        case 'unsubscribed':
          r.filters = r.filters.filter((x) => x !== f.filter);
          setFilters(r.filters);
          break;
        case 'refused':
          setError(f.filter ? `${f.filter}: ${f.message}` : f.message);
          break;
        case 'error':
          setError(f.message);
          break;
      }
    };
    const onState = (s) => {
      setState(s);
      // A new socket (after a reconnect) has no subscriptions: ask for the page's again.
      if (s === 'open') for (const x of r.filters) r.watch.send({ t: 'subscribe', filter: x });
    };
    r.watch = new Watch(onFrame, onState);
    r.watch.start();
    return () => r.watch.stop();
  }, []);

  function subscribe(e) {
    e.preventDefault();
    const f = filter.trim();
    if (f === '') return setError('a topic filter is required');
    if (!ref.current.watch.send({ t: 'subscribe', filter: f })) return setError('not connected to the admin server: try again in a moment');
    setError(null);
  }
  function unsubscribe(f) {
    ref.current.watch.send({ t: 'unsubscribe', filter: f });
  }
  function togglePause() {
    ref.current.paused = !paused;
    setPaused(!paused);
  }
  function clear() {
    const r = ref.current;
    r.rows = [];
    r.incoming = [];
    setView({ rows: [], matched: r.matched, dropped: r.dropped });
  }

  return html`<div>
    <h2>Live messages</h2>
    <form class="card inline" onSubmit=${subscribe} aria-label="watch a topic filter">
      <label>Topic filter <input name="filter" class="wide" value=${filter} onInput=${(e) => setFilter(e.target.value)} placeholder="sensors/+/temperature" /></label>
      <button type="submit">Subscribe</button>
      <span class="muted" role="status">${state === 'open' ? 'connected' : state === 'closed' ? 'disconnected: reconnecting…' : 'connecting…'}</span>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form>
    <section class="card" aria-label="watched filters">
      ${filters.length === 0
        ? html`<p class="muted">No filter watched. Messages published from now on to a watched filter appear below, if the ACL lets your user subscribe to it.</p>`
        : html`<ul class="filters">${filters.map((f) => html`<li key=${f} data-filter=${f}><code>${f}</code> <button class="link" onClick=${() => unsubscribe(f)} aria-label=${`unsubscribe ${f}`}>Unsubscribe</button></li>`)}</ul>`}
    </section>
    <section class="card" aria-label="messages">
      <p class="inline-bar">
        <span class="muted"><b data-testid="watch-matched">${view.matched}</b> matched, <b data-testid="watch-dropped">${view.dropped}</b> dropped by the server's bound (100 messages, 256 KiB a second), <b data-testid="watch-shown">${view.rows.length}</b> shown (the newest ${MAX_SHOWN})</span>
        <button type="button" aria-pressed=${paused} onClick=${togglePause}>${paused ? 'Resume' : 'Pause'}</button>
        <button type="button" onClick=${clear}>Clear</button>
      </p>
      <div class="scroll">
        <table class="messages">
          <thead><tr><th>Time</th><th>Topic</th><th>QoS</th><th>Retain</th><th>Size</th><th>Payload</th></tr></thead>
          <tbody>${view.rows.map((m) => html`<tr key=${m.key} data-topic=${m.topic}>
            <td>${new Date(m.time).toLocaleTimeString()}</td><td>${m.topic}</td><td>${m.qos}</td><td>${m.retain ? 'yes' : ''}</td><td>${m.size}</td>
            <td class="payload"><code>${m.encoding === 'base64' ? 'base64: ' : ''}${m.payload.length > PAYLOAD_CHARS ? `${m.payload.slice(0, PAYLOAD_CHARS)}…` : m.truncated ? `${m.payload}…` : m.payload}</code></td>
          </tr>`)}</tbody>
        </table>
      </div>
    </section>
  </div>`;
}
