// @ts-check
// MQTT bridges to remote brokers: the bridges with their runtime (state, since, queued, in
// flight, messages in and out, dropped, last error; refreshed every 2 s while the page is open),
// add and change (a form generated from the /bridge/add route's schema, schema-form.js: the
// forwards and subscriptions as a fieldset each; a refusal shown at its field), start, stop,
// delete. A bridge of the configuration file is read-only here (start and stop apply until a
// restart). Passwords are never shown: a change without one keeps the stored password.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api, openApiDocument } from '../api.js';
import { errText, usePoll, when } from '../forms.js';
import { formValue, problemOf, SchemaFields, sendValue } from '../schema-form.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

export function Bridges({ user }) {
  const [list, setList] = useState(/** @type {any[] | null} */ (null));
  const [runtime, setRuntime] = useState(/** @type {Record<string, any>} */ ({}));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [editing, setEditing] = useState(/** @type {any} */ (null));
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const [r, rt] = await Promise.all([api('POST', '/bridge/query', { page: 1, size: 1000 }), api('POST', '/bridge/runtime', {})]);
      setList(r.data);
      setRuntime(Object.fromEntries((rt.data ?? []).map((/** @type {any} */ x) => [x.name, x])));
      setError(null);
    } catch (err) {
      setError(errText('', err));
    }
  }
  usePoll(load, REFRESH_MS);
  return html`<div>
    <h2>Bridges</h2>
    ${canWrite && html`<${BridgeForm} key=${editing?.name ?? 'new'} bridge=${editing} onDone=${() => { setEditing(null); void load(); }} />`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="bridges">
      <table>
        <thead><tr><th>Name</th><th>Remote</th><th>Source</th><th>State</th><th>Since</th><th>Queued</th><th>In flight</th><th>In</th><th>Out</th><th>Dropped</th><th>Last error</th><th></th></tr></thead>
        <tbody>${(list ?? []).map((b) => html`<${BridgeRow} key=${b.name} b=${b} rt=${runtime[b.name]} canWrite=${canWrite} onChanged=${load} onEdit=${setEditing} />`)}</tbody>
      </table>
      ${list && list.length === 0 && html`<p class="muted">No bridges.</p>`}
    </section>
  </div>`;
}

function BridgeForm({ bridge, onDone }) {
  const [schema, setSchema] = useState(/** @type {any} */ (null));
  const [value, setValue] = useState(/** @type {any} */ (null));
  const [problem, setProblem] = useState(/** @type {{field?: string, message: string} | null} */ (null));
  useEffect(() => {
    openApiDocument().then((doc) => {
      const s = doc.paths['/bridge/add'].post.requestBody.content['application/json'].schema;
      setSchema(s);
      setValue(formValue(s, bridge ?? {}));
    }, (err) => setProblem({ message: `the API's schemas could not be read: ${err.message}` }));
  }, []);
  async function save(/** @type {Event} */ e) {
    e.preventDefault();
    try {
      const body = sendValue(schema, value, true, '');
      await api('POST', bridge ? '/bridge/update' : '/bridge/add', body);
      setProblem(null);
      if (!bridge) setValue(formValue(schema, {}));
      onDone();
    } catch (err) {
      setProblem(problemOf(err));
    }
  }
  if (!schema) return html`<p class="muted">Reading the fields of a bridge…</p>`;
  const fields = new Set(['', ...Object.keys(schema.properties ?? {})]);
  const named = problem?.field !== undefined && [...fields].some((f) => problem.field === f || problem.field.startsWith(`${f}.`) || problem.field.startsWith(`${f}[`));
  return html`<form class="card editor" onSubmit=${save} aria-label=${bridge ? `change ${bridge.name}` : 'add a bridge'} novalidate>
    ${bridge && html`<p class="muted">Changing ${bridge.name}; it reconnects with the new configuration. Its password is not
      shown: leave it empty to keep it. <button type="button" class="link" onClick=${onDone}>Cancel</button></p>`}
    <${SchemaFields} schema=${schema} value=${value} onChange=${setValue} path="" problem=${problem} legend="Bridge" />
    <div class="inline"><button type="submit">${bridge ? 'Save bridge' : 'Add bridge'}</button></div>
    ${problem && !named && html`<p class="error" role="alert">${errText(bridge ? 'save' : 'add', problem)}</p>`}
  </form>`;
}

function BridgeRow({ b, rt, canWrite, onChanged, onEdit }) {
  const [error, setError] = useState(/** @type {string | null} */ (null));
  async function call(/** @type {'/bridge/start' | '/bridge/stop' | '/bridge/delete'} */ path, /** @type {string} */ what) {
    try {
      await api('POST', path, { name: b.name });
      setError(null);
      onChanged();
    } catch (err) {
      setError(errText(what, err));
    }
  }
  const dropped = rt ? Object.values(rt.dropped ?? {}).reduce((x, y) => x + y, 0) : undefined;
  const enabled = rt?.enabled ?? b.enabled !== false;
  const fromFile = b.source === 'config';
  return html`<tr data-bridge=${b.name}>
    <td>${b.name}</td><td><code>${b.url}</code></td><td>${b.source ?? ''}</td><td class="state">${rt?.state ?? '–'}</td><td>${when(rt?.connectedSince)}</td>
    <td>${rt?.queued ?? '–'}</td><td>${rt?.inflight ?? '–'}</td><td>${rt?.messagesIn ?? '–'}</td><td>${rt?.messagesOut ?? '–'}</td>
    <td title=${rt ? JSON.stringify(rt.dropped) : ''}>${dropped ?? '–'}</td><td class="wrap">${rt?.lastError ?? ''}</td>
    <td>${canWrite && html`
      ${enabled ? html`<button onClick=${() => call('/bridge/stop', 'stop')}>Stop</button>` : html`<button onClick=${() => call('/bridge/start', 'start')}>Start</button>`}
      ${!fromFile && html`<button onClick=${() => onEdit(b)}>Edit</button>
        <button class="danger" onClick=${() => call('/bridge/delete', 'delete')}>Delete</button>`}`}
      ${error && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>`;
}
