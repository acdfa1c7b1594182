// Rules: the rules with their runtime counters and their actions' (refreshed every 2 s while the
// page is open), an SQL editor that runs /rule/test on sample data, and create with actions of
// any type /rule/actions lists (republish, or a write to a data source chosen from the sources of
// the type the action needs; each action's fields as the API describes them), enable or disable,
// delete. Edit an existing rule (its SQL, actions and enabled flag, /rule/update) with the SQL
// test beside the editor, showing the output or the error.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, errText, parseObject } from '../forms.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

export function Rules({ user }) {
  const [rules, setRules] = useState([]);
  const [runtime, setRuntime] = useState({});
  const [error, setError] = useState(null);
  const [editing, setEditing] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const r = await api('POST', '/rule/query', { page: 1, size: 1000 });
      setRules(r.data);
      const counters = await Promise.all(r.data.map((x) => api('POST', '/rule/runtime', { id: x.id }).then((a) => [x.id, a.data], () => [x.id, null])));
      setRuntime(Object.fromEntries(counters));
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
    const t = setInterval(load, REFRESH_MS);
    return () => clearInterval(t);
  }, []);
  const act = (path, body, what) => attempt(what, setError, () => api('POST', path, body), load);
  return html`<div>
    <h2>Rules</h2>
    ${editing && html`<${RuleEdit} key=${editing.id} rule=${editing} onDone=${() => { setEditing(null); void load(); }} />`}
    <${RuleEditor} canWrite=${canWrite} onCreated=${load} />
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card">
      <table>
        <thead><tr><th>Name</th><th>SQL</th><th>State</th><th>Matched</th><th>Passed</th><th>Failed</th><th>Actions</th><th>Last error</th><th></th></tr></thead>
        <tbody>${rules.map((r) => {
          const rt = runtime[r.id];
          return html`<tr key=${r.id} data-rule=${r.name}>
            <td>${r.name}</td><td class="wrap"><code>${r.sql.length > 60 ? `${r.sql.slice(0, 60)}…` : r.sql}</code></td>
            <td>${r.enabled ? 'enabled' : 'disabled'}</td>
            <td class="matched">${rt?.matched ?? '–'}</td><td>${rt?.passed ?? '–'}</td><td>${rt?.failed ?? '–'}</td>
            <td class="actions">${r.actions.map((a, i) => {
              const ar = rt?.actions?.[i];
              return html`<div data-action=${a.type}>${a.type}${ar ? `: ${ar.success} ok, ${ar.failed} failed${ar.dropped ? `, ${ar.dropped} dropped` : ''}${ar.queued ? `, ${ar.queued} queued` : ''}` : ''}</div>`;
            })}</td>
            <td class="wrap">${rt?.lastError ?? r.actions.map((_, i) => rt?.actions?.[i]?.lastError).find(Boolean) ?? ''}</td>
            <td>${canWrite && html`
              <button onClick=${() => { setEditing(r); window.scrollTo(0, 0); }}>Edit</button>
              <button onClick=${() => act('/rule/state/set', { id: r.id, enabled: !r.enabled }, r.name)}>${r.enabled ? 'Disable' : 'Enable'}</button>
              <button class="danger" onClick=${() => act('/rule/delete', { id: r.id }, r.name)}>Delete</button>`}</td>
          </tr>`;
        })}</tbody>
      </table>
      ${rules.length === 0 && html`<p class="muted">No rules.</p>`}
    </section>
  </div>`;
}

function RuleEditor({ canWrite, onCreated }) {
  const [name, setName] = useState('');
  const [sql, setSql] = useState('SELECT payload.temp AS temp, clientid FROM "sensors/#" WHERE payload.temp > 30');
  const [topic, setTopic] = useState('sensors/1');
  const [payload, setPayload] = useState('{"temp": 35}');
  const [actions, setActions] = useState([]);
  const [specs, setSpecs] = useState([]);
  const [sources, setSources] = useState([]);
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (!canWrite) return;
    api('GET', '/rule/actions').then((r) => setSpecs(r.data), (err) => setError(errText('actions', err)));
  }, []);
  async function loadSources() {
    try {
      setSources((await api('POST', '/source/query', { page: 1, size: 1000 })).data);
    } catch (err) {
      setError(errText('sources', err));
    }
  }
  async function test() {
    setResult(null);
    try {
      const r = await api('POST', '/rule/test', { sql, testData: { topic, payload, clientid: 'console-test' } });
      setResult(r.data ?? r);
      setError(null);
    } catch (err) {
      setError(`test: ${err.message}`);
    }
  }
  function addAction() {
    void loadSources();
    setActions([...actions, { key: Math.random().toString(36).slice(2), type: 'republish', values: {} }]);
  }
  async function create(e) {
    e.preventDefault();
    try {
      const body = actions.map((a, i) => ({ type: a.type, config: actionConfig(specs.find((s) => s.type === a.type), a.values, i) }));
      await api('POST', '/rule/add', { name, sql, actions: body });
      setError(null);
      setName('');
      setActions([]);
      onCreated();
    } catch (err) {
      setError(errText('create', err));
    }
  }
  return html`<form class="card editor" onSubmit=${create} aria-label="rule editor">
    <label>SQL <textarea name="sql" rows="4" spellcheck=${false} value=${sql} onInput=${(e) => setSql(e.target.value)} /></label>
    <div class="inline">
      <label>Sample topic <input name="topic" value=${topic} onInput=${(e) => setTopic(e.target.value)} /></label>
      <label>Sample payload <input name="payload" class="wide" value=${payload} onInput=${(e) => setPayload(e.target.value)} /></label>
      <button type="button" onClick=${test}>Test</button>
    </div>
    ${result && html`<pre data-testid="rule-test-result">${JSON.stringify(result, null, 2)}</pre>`}
    ${canWrite && html`
      ${actions.map((a, i) => html`<${ActionEditor} key=${a.key} index=${i} action=${a} specs=${specs} sources=${sources}
        onChange=${(next) => setActions(actions.map((x, j) => (j === i ? next : x)))}
        onRemove=${() => setActions(actions.filter((_, j) => j !== i))} />`)}
      <div class="inline">
        <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
        <button type="button" onClick=${addAction}>Add action</button>
        <button type="submit">Create rule</button>
      </div>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

/** The SQL test (/rule/test) on a sample topic and payload: the output, or why it did not match,
 * or the error. */
function SqlTest({ sql }) {
  const [topic, setTopic] = useState('sensors/1');
  const [payload, setPayload] = useState('{"temp": 35}');
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  async function test(e) {
    e.preventDefault();
    setResult(null);
    try {
      const r = await api('POST', '/rule/test', { sql, testData: { topic, payload, clientid: 'console-test' } });
      setResult(r.data ?? r);
      setError(null);
    } catch (err) {
      setError(errText('test', err));
    }
  }
  return html`<form class="editor" onSubmit=${test} aria-label="SQL test">
    <h3>Test the SQL</h3>
    <label>Sample topic <input name="topic" value=${topic} onInput=${(e) => setTopic(e.target.value)} /></label>
    <label>Sample payload <textarea name="payload" rows="3" spellcheck=${false} value=${payload} onInput=${(e) => setPayload(e.target.value)} /></label>
    <div class="inline"><button type="submit">Test</button></div>
    ${result && html`<div data-testid="rule-edit-test-result">${result.matched
      ? html`<p>Matched; the output:</p><pre>${JSON.stringify(result.output, null, 2)}</pre>`
      : html`<p class="muted">Not matched${result.reason ? `: ${result.reason}` : ''}.</p>`}</div>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

/** What an action's field holds, as its editor shows it (objects and lists as JSON). */
function shown(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'boolean') return v;
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Edit an existing rule: SQL, actions, enabled; saved with /rule/update; the SQL test beside. */
function RuleEdit({ rule, onDone }) {
  const [sql, setSql] = useState(rule.sql);
  const [enabled, setEnabled] = useState(rule.enabled);
  const [actions, setActions] = useState(() => rule.actions.map((a, i) => ({ key: `a${i}`, type: a.type, values: Object.fromEntries(Object.entries(a.config ?? {}).map(([k, v]) => [k, shown(v)])) })));
  const [specs, setSpecs] = useState([]);
  const [sources, setSources] = useState([]);
  const [error, setError] = useState(null);
  useEffect(() => {
    api('GET', '/rule/actions').then((r) => setSpecs(r.data), (err) => setError(errText('actions', err)));
    api('POST', '/source/query', { page: 1, size: 1000 }).then((r) => setSources(r.data), () => undefined);
  }, []);
  async function save(e) {
    e.preventDefault();
    try {
      const body = actions.map((a, i) => ({ type: a.type, config: actionConfig(specs.find((s) => s.type === a.type), a.values, i) }));
      await api('POST', '/rule/update', { id: rule.id, sql, enabled, actions: body });
      setError(null);
      onDone();
    } catch (err) {
      setError(errText('save', err));
    }
  }
  return html`<section class="card" aria-label=${`edit rule ${rule.name}`}>
    <h3>Edit rule ${rule.name} <span class="muted">(${rule.id})</span></h3>
    <div class="grid">
      <form class="editor" onSubmit=${save} aria-label="rule edit">
        <label>SQL <textarea name="sql" rows="6" spellcheck=${false} value=${sql} onInput=${(e) => setSql(e.target.value)} /></label>
        <label class="check"><input type="checkbox" name="enabled" checked=${enabled} onChange=${(e) => setEnabled(e.target.checked)} /> Enabled</label>
        ${actions.map((a, i) => html`<${ActionEditor} key=${a.key} index=${i} action=${a} specs=${specs} sources=${sources}
          onChange=${(next) => setActions(actions.map((x, j) => (j === i ? next : x)))}
          onRemove=${() => setActions(actions.filter((_, j) => j !== i))} />`)}
        <div class="inline">
          <button type="button" onClick=${() => setActions([...actions, { key: Math.random().toString(36).slice(2), type: 'republish', values: {} }])}>Add action</button>
          <button type="submit">Save</button>
          <button type="button" onClick=${onDone}>Cancel</button>
        </div>
        ${error && html`<p class="error" role="alert">${error}</p>`}
      </form>
      <${SqlTest} sql=${sql} />
    </div>
  </section>`;
}

/** An action's config from what was typed, by the types /rule/actions gives its fields. */
function actionConfig(spec, values, index) {
  /** @type {Record<string, unknown>} */
  const config = {};
  for (const f of spec?.fields ?? []) {
    const v = values[f.name];
    if (f.type === 'boolean') {
      if (v) config[f.name] = true;
      continue;
    }
    const s = String(v ?? '').trim();
    if (s === '') continue;
    if (f.type === 'integer') config[f.name] = Number(s);
    else if (f.type === 'object') config[f.name] = parseObject(s, `actions[${index}].config.${f.name}`);
    else if (f.type === 'array' && s.startsWith('[')) config[f.name] = JSON.parse(s);
    else config[f.name] = s;
  }
  return config;
}

function ActionEditor({ index, action, specs, sources, onChange, onRemove }) {
  const spec = specs.find((s) => s.type === action.type);
  const set = (name, v) => onChange({ ...action, values: { ...action.values, [name]: v } });
  const fit = sources.filter((s) => s.type === spec?.sourceType);
  function field(f) {
    const label = `${f.name}${f.required ? ' *' : ''}`;
    const v = action.values[f.name] ?? '';
    if (f.name === 'source' && spec?.sourceType) {
      return html`<label title=${f.description}>${label} <select name="source" required value=${v} onChange=${(e) => set('source', e.target.value)}>
        <option value="">${fit.length ? `choose a ${spec.sourceType} source` : `no ${spec.sourceType} source: add one on the Data sources page`}</option>
        ${fit.map((s) => html`<option value=${s.id}>${s.name} (${s.id})</option>`)}</select></label>`;
    }
    if (f.type === 'boolean') return html`<label class="check" title=${f.description}><input type="checkbox" checked=${!!v} onChange=${(e) => set(f.name, e.target.checked)} /> ${f.name}</label>`;
    return html`<label title=${f.description}>${label} <input name=${f.name} type=${f.type === 'integer' ? 'number' : 'text'} class=${f.type === 'object' || f.type === 'array' || f.name === 'body' || f.name === 'payload' ? 'wide' : ''}
      placeholder=${f.type === 'object' ? '{"name": "${field}"}' : f.default !== undefined ? String(f.default) : ''} value=${v} onInput=${(e) => set(f.name, e.target.value)} /></label>`;
  }
  return html`<fieldset class="action" aria-label=${`action ${index + 1}`}>
    <legend>Action ${index + 1}</legend>
    <div class="inline">
      <label>Action type <select value=${action.type} onChange=${(e) => onChange({ ...action, type: e.target.value, values: {} })}>
        ${specs.map((s) => html`<option value=${s.type}>${s.type}</option>`)}</select></label>
      ${spec?.fields.map(field)}
      <button type="button" class="danger" onClick=${onRemove}>Remove action</button>
    </div>
    ${spec && html`<p class="muted">${spec.description}</p>`}
  </fieldset>`;
}
