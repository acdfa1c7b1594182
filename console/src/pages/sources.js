// @ts-check
// Data sources (spec 4.6): the sources with their pool's health and the writes of the rule actions
// that use them (refreshed every 2 s while the page is open), add (a form per type generated from
// the /source/add route's schema, schema-form.js; tried with /source/check before saving if
// wanted), check, delete.
// The API has no enable/disable for a source: its pool is open while it exists.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { errText, usePoll } from '../forms.js';
import { atField, ConfigEditor, problemOf, useConfigForm, useConfigSchemas } from '../schema-form.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

function target(config) {
  if (config.url) return config.url;
  if (config.bootstrapServers) return String(config.bootstrapServers);
  if (config.host) return `${config.host}${config.port ? `:${config.port}` : ''}`;
  return '';
}

function checkText(r) {
  return r.ok ? `reachable (${r.latencyMs} ms)` : `${r.failure ?? 'failed'}: ${r.message ?? ''} (${r.latencyMs} ms)`;
}

export function Sources({ user }) {
  const [list, setList] = useState(null);
  const [info, setInfo] = useState({});
  const [types, setTypes] = useState(/** @type {string[]} */ ([]));
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const r = await api('POST', '/source/query', { page: 1, size: 1000 });
      const infos = await Promise.all(r.data.map((s) => api('POST', '/source/query/info', { id: s.id }).then((a) => [s.id, a.data], () => [s.id, null])));
      setList(r.data);
      setInfo(Object.fromEntries(infos));
      setError(null);
    } catch (err) {
      setError(errText('', err));
    }
  }
  usePoll(load, REFRESH_MS);
  useEffect(() => {
    api('GET', '/source/type').then((t) => Array.isArray(t) && setTypes(t), () => undefined);
  }, []);
  return html`<div>
    <h2>Data sources</h2>
    ${canWrite && html`<${AddSource} types=${types} onAdded=${load} />`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="data sources">
      <table>
        <thead><tr><th>Name</th><th>Type</th><th>Target</th><th>Health</th><th>In flight</th><th>Reconnects</th><th>Written</th><th>Failed</th><th>Last error</th><th></th></tr></thead>
        <tbody>${(list ?? []).map((s) => html`<${SourceRow} key=${s.id} s=${s} info=${info[s.id]} canWrite=${canWrite} onChanged=${load} />`)}</tbody>
      </table>
      ${list && list.length === 0 && html`<p class="muted">No data sources.</p>`}
    </section>
  </div>`;
}

function AddSource({ types, onAdded }) {
  const { configs, error: schemaError } = useConfigSchemas('/source/add');
  const [name, setName] = useState('');
  const [type, setType] = useState('http');
  const form = useConfigForm(configs?.[type]);
  const [checked, setChecked] = useState(null);
  const [problem, setProblem] = useState(/** @type {{field?: string, message: string} | null} */ (null));
  const [what, setWhat] = useState('add');
  function changeType(/** @type {string} */ t) {
    setType(t);
    setChecked(null);
    setProblem(null);
  }
  /** The config, or null with the problem shown at its field. */
  function config(/** @type {string} */ doing) {
    try {
      return form.collect();
    } catch (err) {
      setWhat(doing);
      setProblem(problemOf(err));
      return null;
    }
  }
  async function check() {
    setChecked(null);
    const c = config('check');
    if (!c) return;
    try {
      const r = await api('POST', '/source/check', { type: /** @type {any} */ (type), config: c });
      setChecked(r.data);
      setProblem(null);
    } catch (err) {
      setWhat('check');
      setProblem(problemOf(err));
    }
  }
  async function add(/** @type {Event} */ e) {
    e.preventDefault();
    const c = config('add');
    if (!c) return;
    try {
      await api('POST', '/source/add', /** @type {any} */ ({ name: name.trim(), type, config: c }));
      setProblem(null);
      setChecked(null);
      setName('');
      form.reset();
      onAdded();
    } catch (err) {
      setWhat('add');
      setProblem(problemOf(err));
    }
  }
  const shownTypes = types.length > 0 ? types : Object.keys(configs ?? {});
  return html`<form class="card editor" onSubmit=${add} aria-label="add a data source" novalidate>
    <div class="inline">
      <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <label>Type <select name="type" value=${type} onChange=${(e) => changeType(e.target.value)}>
        ${shownTypes.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
    </div>
    ${schemaError && html`<p class="error" role="alert">${schemaError}</p>`}
    <${ConfigEditor} state=${form} problem=${problem} />
    <div class="inline">
      <button type="button" onClick=${check}>Check</button>
      <button type="submit">Add source</button>
      <span role="status" data-testid="source-check-result" class=${checked && !checked.ok ? 'error' : ''}>${checked ? checkText(checked) : ''}</span>
    </div>
    ${problem && !atField(problem) && html`<p class="error" role="alert">${errText(what, problem)}</p>`}
  </form>`;
}

function SourceRow({ s, info, canWrite, onChanged }) {
  const [checked, setChecked] = useState(null);
  const [error, setError] = useState(null);
  const health = info?.health;
  const queries = info?.queries ?? [];
  const sum = (k) => queries.reduce((n, q) => n + (q.runtime?.[k] ?? 0), 0);
  async function check() {
    setChecked(null);
    try {
      setChecked((await api('POST', '/source/check', { id: s.id })).data);
      setError(null);
    } catch (err) {
      setError(errText('check', err));
    }
  }
  async function remove() {
    try {
      await api('POST', '/source/delete', { id: s.id });
      setError(null);
      onChanged();
    } catch (err) {
      setError(errText('delete', err));
    }
  }
  return html`<tr data-source=${s.name}>
    <td>${s.name}</td><td>${s.type}</td><td><code>${target(s.config)}</code></td>
    <td class="health">${health?.state ?? s.health}</td>
    <td>${health?.inFlight ?? '–'}</td><td>${health?.reconnects ?? '–'}</td>
    <td class="written" title=${`${queries.length} rule action(s) write here`}>${info ? sum('success') : '–'}</td><td>${info ? sum('failed') : '–'}</td>
    <td class="wrap">${health?.lastError ?? ''}</td>
    <td>${canWrite && html`<button onClick=${check}>Check</button>
      <button class="danger" onClick=${remove}>Delete</button>`}
      <span role="status" class=${checked && !checked.ok ? 'error' : ''}>${checked ? checkText(checked) : ''}</span>
      ${error && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>`;
}
