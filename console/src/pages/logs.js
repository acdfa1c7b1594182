// Logs (spec 4.8): query the log store (level and above, text, module, time range, paged, newest
// first), download what the query matches (/log/download, NDJSON or gzip), follow new lines live
// (the log tail of /api/watch: bounded by the server, the newest TAIL_SHOWN kept here), the log
// level, deleting old log files (admins, after a confirmation), and the log topics and client
// traces.
import { h } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, errText } from '../forms.js';
import { Watch, perFrame } from '../watch.js';

const html = htm.bind(h);
const PAGE_SIZE = 50;
const TAIL_SHOWN = 200;
const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'];

export function Logs({ user }) {
  const canWrite = user.role === 'admin';
  // Bumped when files are deleted: the query runs again.
  const [deleted, setDeleted] = useState(0);
  return html`<div>
    <h2>Logs</h2>
    <${Query} deleted=${deleted} />
    <${Tail} />
    <${Level} canWrite=${canWrite} />
    ${canWrite && html`<${DeleteOld} onDeleted=${() => setDeleted((n) => n + 1)} />`}
    <${LogTopics} canWrite=${canWrite} />
    <${Traces} canWrite=${canWrite} />
  </div>`;
}

/** The filter of the form as the API takes it (empty fields left out; local times to ISO). */
function filterOf(f) {
  const out = {};
  if (f.level) out.level = f.level;
  if (f.text.trim()) out.text = f.text.trim();
  if (f.module.trim()) out.module = f.module.trim();
  if (f.from) out.startTime = new Date(f.from).toISOString();
  if (f.to) out.endTime = new Date(f.to).toISOString();
  return out;
}

function LogRows({ rows }) {
  return html`<table class="logs">
    <thead><tr><th>Time</th><th>Level</th><th>Module</th><th>Message</th><th>Fields</th></tr></thead>
    <tbody>${rows.map((e) => html`<tr key=${e.id} data-log=${e.id} class=${`level-${e.level.toLowerCase()}`}>
      <td>${e.time}</td><td>${e.level}</td><td>${e.module}</td><td class="message">${e.message}</td>
      <td class="fields"><code>${typeof e.fields === 'string' ? e.fields : Object.keys(e.fields ?? {}).length ? JSON.stringify(e.fields) : ''}</code></td>
    </tr>`)}</tbody>
  </table>`;
}

function Query({ deleted }) {
  const [form, setForm] = useState({ level: '', text: '', module: '', from: '', to: '' });
  const [page, setPage] = useState(1);
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  async function load(p = page, f = form) {
    setBusy(true);
    try {
      setResult(await api('POST', '/log/query', { ...filterOf(f), page: p, size: PAGE_SIZE }));
      setError(null);
    } catch (err) {
      setError(err.field ? `${err.field}: ${err.message}` : err.message);
    } finally {
      setBusy(false);
    }
  }
  useEffect(() => {
    void load();
  }, [deleted]);
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  const download = `/log/download?${new URLSearchParams(/** @type {any} */ (filterOf(form))).toString()}`;
  const total = result?.total ?? 0;
  return html`<section class="card" aria-label="log query">
    <form class="inline" role="search" onSubmit=${(e) => { e.preventDefault(); setPage(1); void load(1); }}>
      <label>Level <select value=${form.level} onChange=${set('level')}><option value="">any</option>${LEVELS.map((l) => html`<option value=${l}>${l} and above</option>`)}</select></label>
      <label>Text <input type="search" value=${form.text} onInput=${set('text')} placeholder="in the message or fields" /></label>
      <label>Module <input value=${form.module} onInput=${set('module')} placeholder="main, worker-0, …" /></label>
      <label>From <input type="datetime-local" step="1" value=${form.from} onInput=${set('from')} /></label>
      <label>To <input type="datetime-local" step="1" value=${form.to} onInput=${set('to')} /></label>
      <button type="submit" disabled=${busy}>Search</button>
      <a class="button" href=${download} download>Download</a>
      <a class="button" href=${`${download}&gzip=true`} download>Download .gz</a>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <p class="muted" data-testid="log-total">${total} ${total === 1 ? 'entry' : 'entries'}${total > PAGE_SIZE ? `, page ${page} of ${Math.ceil(total / PAGE_SIZE)}` : ''}, newest first</p>
    <div class="scroll"><${LogRows} rows=${result?.data ?? []} /></div>
    ${total > PAGE_SIZE && html`<p>
      <button disabled=${page <= 1 || busy} onClick=${() => { setPage(page - 1); void load(page - 1); }}>Previous</button>
      <button disabled=${page * PAGE_SIZE >= total || busy} onClick=${() => { setPage(page + 1); void load(page + 1); }}>Next</button></p>`}
  </section>`;
}

/** New log lines as they are written, while "Follow" is on. */
function Tail() {
  const [on, setOn] = useState(false);
  const [view, setView] = useState({ rows: [], lines: 0, dropped: 0 });
  const [error, setError] = useState(null);
  const ref = useRef({ rows: [], incoming: [], lines: 0, dropped: 0 });
  useEffect(() => {
    if (!on) return undefined;
    const r = ref.current;
    const render = perFrame(() => {
      if (r.incoming.length > 0) {
        r.rows = r.incoming.reverse().concat(r.rows).slice(0, TAIL_SHOWN);
        r.incoming = [];
      }
      setView({ rows: r.rows, lines: r.lines, dropped: r.dropped });
    });
    const watch = new Watch((f) => {
      if (f.t === 'logs') {
        r.lines = f.lines;
        r.dropped = f.dropped;
        r.incoming.push(...f.items);
        if (r.incoming.length > TAIL_SHOWN) r.incoming.splice(0, r.incoming.length - TAIL_SHOWN);
        render();
      } else if (f.t === 'tail' && f.message) {
        setError(f.message);
      }
    }, (s) => {
      if (s === 'open') watch.send({ t: 'tail', on: true });
    });
    watch.start();
    return () => watch.stop();
  }, [on]);
  return html`<section class="card" aria-label="log tail">
    <div class="inline-bar"><h3>Live tail</h3>
      <button type="button" aria-pressed=${on} onClick=${() => { setError(null); setOn(!on); }}>${on ? 'Stop following' : 'Follow'}</button>
      ${!on && html`<span class="muted">new log lines as the broker writes them</span>`}</div>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${on && html`<p class="muted"><b data-testid="tail-lines">${view.lines}</b> new lines, <b data-testid="tail-dropped">${view.dropped}</b> dropped by the server's bound (50 lines a second), the newest ${TAIL_SHOWN} shown</p>
      <div class="scroll short"><${LogRows} rows=${view.rows} /></div>`}
  </section>`;
}

/** /log/delete: the whole files whose entries are all older than a time, after a confirmation. */
function DeleteOld({ onDeleted }) {
  const [before, setBefore] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const confirmRef = useRef(null);
  const askRef = useRef(null);
  const cancelled = useRef(false);
  // The focus follows the swap: to "Yes, delete" when asked, back to "Delete files" on Cancel.
  useLayoutEffect(() => {
    if (confirming) confirmRef.current?.focus();
    else if (cancelled.current) askRef.current?.focus();
    cancelled.current = false;
  }, [confirming]);
  function ask(e) {
    e.preventDefault();
    setResult(null);
    setError(null);
    setConfirming(true);
  }
  async function remove() {
    setConfirming(false);
    try {
      const r = await api('POST', '/log/delete', { before: new Date(before).toISOString() });
      setResult(`${r.data.removedFiles} ${r.data.removedFiles === 1 ? 'file' : 'files'} deleted or emptied`);
      onDeleted();
    } catch (err) {
      setError(errText('delete', err));
    }
  }
  return html`<section class="card" aria-label="old log files">
    <h3>Old log files</h3>
    <p class="muted">Deletes whole files: those whose entries are all older than the time (the live file is emptied when its newest entry is). Entries are never removed one by one.</p>
    <form class="inline" onSubmit=${ask} aria-label="delete old log files">
      <label>Older than <input name="before" type="datetime-local" step="1" required value=${before}
        onInput=${(e) => { setBefore(e.target.value); setConfirming(false); }} /></label>
      ${confirming
        ? html`<span role="group" aria-label="confirm">Delete the files older than ${new Date(before).toLocaleString()}?
            <button type="button" class="danger" ref=${confirmRef} onClick=${remove}>Yes, delete</button>
            <button type="button" onClick=${() => { cancelled.current = true; setConfirming(false); }}>Cancel</button></span>`
        : html`<button type="submit" class="danger" ref=${askRef}>Delete files</button>`}
      <output data-testid="log-delete-result">${result ?? ''}</output>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </section>`;
}

function Level({ canWrite }) {
  const [level, setLevel] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    api('GET', '/log/level').then((r) => setLevel(r.data.level), (err) => setError(err.message));
  }, []);
  async function change(e) {
    const to = e.target.value;
    try {
      await api('POST', '/log/level', { level: to });
      setLevel(to);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  return html`<section class="card inline-bar" aria-label="log level">
    ${canWrite
      ? html`<label>Log level of every thread <select value=${level ?? ''} onChange=${change}>${LEVELS.map((l) => html`<option value=${l}>${l}</option>`)}</select></label>`
      : html`<p>Log level: <b>${level ?? '…'}</b></p>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </section>`;
}

function LogTopics({ canWrite }) {
  const [rows, setRows] = useState([]);
  const [error, setError] = useState(null);
  async function load() {
    try {
      setRows((await api('GET', '/api/log/topics')).data);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  function add(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    return attempt('', setError, () => api('POST', '/api/log/topic/add', { topic: String(f.get('topic')), level: /** @type {any} */ (f.get('level')) }), () => {
      form.reset();
      return load();
    });
  }
  const remove = (t) => attempt(t.topic, setError, () => api('POST', '/api/log/topic/delete', { id: t.id }), load);
  return html`<section class="card" aria-label="log topics">
    <h3>Log topics</h3>
    <p class="muted">Messages whose topic matches a log topic's filter are written to the log at its level (with the publisher, QoS, size and the payload's first 256 bytes).</p>
    ${canWrite && html`<form class="inline" onSubmit=${add} aria-label="add a log topic">
      <label>Topic filter <input name="topic" required /></label>
      <label>Level <select name="level">${LEVELS.map((l) => html`<option selected=${l === 'INFO'}>${l}</option>`)}</select></label>
      <button type="submit">Add</button>
    </form>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <table>
      <thead><tr><th>Topic filter</th><th>Level</th><th>Created</th><th></th></tr></thead>
      <tbody>${rows.map((t) => html`<tr key=${t.id} data-log-topic=${t.topic}>
        <td>${t.topic}</td><td>${t.level}</td><td>${t.createTime ?? ''}</td>
        <td>${canWrite && html`<button class="danger" onClick=${() => remove(t)}>Delete</button>`}</td>
      </tr>`)}</tbody>
    </table>
  </section>`;
}

function Traces({ canWrite }) {
  const [rows, setRows] = useState([]);
  const [error, setError] = useState(null);
  async function load() {
    try {
      setRows((await api('GET', '/api/log/traces')).data);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  function add(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    return attempt('', setError, () => api('POST', '/api/log/trace/add', { clientId: String(f.get('clientId')), duration: Number(f.get('duration')) }), () => {
      form.reset();
      return load();
    });
  }
  const remove = (clientId) => attempt(clientId, setError, () => api('POST', '/api/log/trace/delete', { clientId }), load);
  return html`<section class="card" aria-label="client traces">
    <h3>Client traces</h3>
    <p class="muted">Every packet a traced client id's connection reads or writes is logged at info, for the duration.</p>
    ${canWrite && html`<form class="inline" onSubmit=${add} aria-label="trace a client">
      <label>Client id <input name="clientId" required /></label>
      <label>Seconds <input name="duration" type="number" min="1" max="86400" value="600" required /></label>
      <button type="submit">Trace</button>
    </form>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <table>
      <thead><tr><th>Client id</th><th>Started</th><th>Ends</th><th></th></tr></thead>
      <tbody>${rows.map((t) => html`<tr key=${t.clientId} data-trace=${t.clientId}>
        <td>${t.clientId}</td><td>${t.startTime}</td><td>${t.endTime}</td>
        <td>${canWrite && html`<button class="danger" onClick=${() => remove(t.clientId)}>Stop</button>`}</td>
      </tr>`)}</tbody>
    </table>
  </section>`;
}
