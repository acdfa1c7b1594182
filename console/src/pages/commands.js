// @ts-check
// Commands (inbound bridges, spec 4.9): the commands with their runtime (state, since, the node
// running it in a cluster, received, published, failed, reconnects, lag, last error; refreshed
// every 2 s while the page is open), add (type from /command/type, its config in a form generated
// from the /command/add route's schema, schema-form.js), change
// (name and config through /command/update: only the keys edited are sent, so the secrets the list
// does not show are kept), start, stop, delete.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { errText, usePoll, when } from '../forms.js';
import { atField, ConfigEditor, problemOf, useConfigForm, useConfigSchemas } from '../schema-form.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

export function Commands({ user }) {
  const [list, setList] = useState(null);
  const [runtime, setRuntime] = useState({});
  const [types, setTypes] = useState(/** @type {string[]} */ ([]));
  const [error, setError] = useState(null);
  const [editing, setEditing] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const r = await api('POST', '/command/query', { page: 1, size: 1000 });
      const rts = await Promise.all(r.data.map((c) => api('POST', '/command/runtime', { id: c.id }).then((a) => [c.id, a.data], () => [c.id, null])));
      setList(r.data);
      setRuntime(Object.fromEntries(rts));
      setError(null);
    } catch (err) {
      setError(errText('', err));
    }
  }
  usePoll(load, REFRESH_MS);
  useEffect(() => {
    api('GET', '/command/type').then((t) => Array.isArray(t) && setTypes(t), () => undefined);
  }, []);
  const clustered = Object.values(runtime).some((rt) => rt && 'runningOn' in rt);
  return html`<div>
    <h2>Commands</h2>
    ${canWrite && (editing
      ? html`<${ChangeCommand} key=${editing.id} command=${editing} onDone=${() => { setEditing(null); void load(); }} />`
      : html`<${AddCommand} types=${types} onAdded=${load} />`)}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="commands">
      <table>
        <thead><tr><th>Name</th><th>Type</th><th>State</th><th>Since</th>${clustered && html`<th>Running on</th>`}<th>Received</th><th>Published</th><th>Failed</th><th>Retries</th><th>Reconnects</th><th>Lag</th><th>Last error</th><th></th></tr></thead>
        <tbody>${(list ?? []).map((c) => html`<${CommandRow} key=${c.id} c=${c} rt=${runtime[c.id]} clustered=${clustered} canWrite=${canWrite} onChanged=${load} onEdit=${setEditing} />`)}</tbody>
      </table>
      ${list && list.length === 0 && html`<p class="muted">No commands.</p>`}
    </section>
  </div>`;
}

function AddCommand({ types, onAdded }) {
  const { configs, error: schemaError } = useConfigSchemas('/command/add');
  const [name, setName] = useState('');
  const [type, setType] = useState('KAFKA');
  const form = useConfigForm(configs?.[type]);
  const [problem, setProblem] = useState(/** @type {{field?: string, message: string} | null} */ (null));
  function changeType(/** @type {string} */ t) {
    setType(t);
    setProblem(null);
  }
  async function add(/** @type {Event} */ e) {
    e.preventDefault();
    try {
      /** @type {Record<string, any>} */
      const body = { type, config: form.collect() };
      if (name.trim()) body.name = name.trim();
      await api('POST', '/command/add', /** @type {any} */ (body));
      setProblem(null);
      setName('');
      form.reset();
      onAdded();
    } catch (err) {
      setProblem(problemOf(err));
    }
  }
  const shownTypes = types.length > 0 ? types : Object.keys(configs ?? {});
  return html`<form class="card editor" onSubmit=${add} aria-label="add a command" novalidate>
    <div class="inline">
      <label>Name <input name="name" value=${name} placeholder="the id" onInput=${(e) => setName(e.target.value)} /></label>
      <label>Type <select name="type" value=${type} onChange=${(e) => changeType(e.target.value)}>
        ${shownTypes.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
    </div>
    ${schemaError && html`<p class="error" role="alert">${schemaError}</p>`}
    <${ConfigEditor} state=${form} problem=${problem} />
    <div class="inline"><button type="submit">Add command</button></div>
    ${problem && !atField(problem) && html`<p class="error" role="alert">${errText('add', problem)}</p>`}
  </form>`;
}

/**
 * What /command/update needs to turn the config shown into the one typed: the keys whose value
 * changed, and null for a key taken out (the API merges; keys the list does not show, such as a
 * password, are never sent, so they are kept).
 */
function configChange(/** @type {Record<string, unknown>} */ shown, /** @type {Record<string, unknown>} */ typed) {
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const [k, v] of Object.entries(typed)) if (JSON.stringify(v) !== JSON.stringify(shown[k])) out[k] = v;
  for (const k of Object.keys(shown)) if (!(k in typed)) out[k] = null;
  return out;
}

function ChangeCommand({ command, onDone }) {
  const { configs, error: schemaError } = useConfigSchemas('/command/add');
  const [name, setName] = useState(command.name);
  const form = useConfigForm(configs?.[command.type], command.config ?? {});
  const [problem, setProblem] = useState(/** @type {{field?: string, message: string} | null} */ (null));
  async function save(/** @type {Event} */ e) {
    e.preventDefault();
    try {
      /** @type {{ id: string, config: Record<string, unknown>, name?: string }} */
      const body = { id: command.id, config: configChange(form.unchanged() ?? {}, form.collect()) };
      if (name.trim() !== command.name) body.name = name.trim();
      await api('POST', '/command/update', body);
      setProblem(null);
      onDone();
    } catch (err) {
      setProblem(problemOf(err));
    }
  }
  return html`<form class="card editor" onSubmit=${save} aria-label=${`change ${command.name}`} novalidate>
    <p class="muted">Changing ${command.name} (${command.type}); a running command restarts with the new config. Only the
      fields you change are sent: passwords, tokens and the password in a URL are not shown and are kept.
      <button type="button" class="link" onClick=${onDone}>Cancel</button></p>
    <div class="inline">
      <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
    </div>
    ${schemaError && html`<p class="error" role="alert">${schemaError}</p>`}
    <${ConfigEditor} state=${form} problem=${problem} />
    <div class="inline"><button type="submit">Save command</button></div>
    ${problem && !atField(problem) && html`<p class="error" role="alert">${errText('save', problem)}</p>`}
  </form>`;
}

function CommandRow({ c, rt, clustered, canWrite, onChanged, onEdit }) {
  const [error, setError] = useState(null);
  async function call(path, what) {
    try {
      await api('POST', path, { id: c.id });
      setError(null);
      onChanged();
    } catch (err) {
      setError(errText(what, err));
    }
  }
  const failed = rt ? Object.values(rt.failed ?? {}).reduce((a, b) => a + b, 0) : undefined;
  const enabled = rt?.enabled ?? c.enabled;
  return html`<tr data-command=${c.name}>
    <td>${c.name}</td><td>${c.type}</td><td class="state">${rt?.state ?? c.state}</td><td>${when(rt?.since)}</td>
    ${clustered && html`<td>${rt?.runningOn ?? '–'}</td>`}
    <td>${rt?.received ?? '–'}</td><td class="published">${rt?.published ?? '–'}</td>
    <td title=${rt ? JSON.stringify(rt.failed) : ''}>${failed ?? '–'}</td><td>${rt?.publishRetries ?? '–'}</td><td>${rt?.reconnects ?? '–'}</td>
    <td>${rt?.lag ?? '–'}</td><td class="wrap last-error">${rt?.lastError ?? ''}</td>
    <td>${canWrite && html`
      ${(!enabled || rt?.state === 'failed') && html`<button onClick=${() => call('/command/start', 'start')}>${enabled ? 'Retry' : 'Start'}</button>`}
      ${enabled && html`<button onClick=${() => call('/command/stop', 'stop')}>Stop</button>`}
      <button onClick=${() => onEdit(c)}>Edit</button>
      <button class="danger" onClick=${() => call('/command/delete', 'delete')}>Delete</button>`}
      ${error && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>`;
}
