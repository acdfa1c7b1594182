// Scripts and extensions (spec 4.9): the scripts in the order they apply, with their runtime
// counters (refreshed every 2 s while the page is open); an editor that compiles with
// /script/check (a syntax error shown at its line and column, the caret put there) and creates or
// saves a script; enable, disable, delete. Extensions: the list with counters, add (a module of
// extensions.dir), enable, disable, delete.
import { h } from 'preact';
import { useRef, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, errText, parseObject, usePoll } from '../forms.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;
const EXAMPLE = `// Return a new payload (string or bytes), {topic, payload}, null to drop, or undefined to pass.
function convert(topic, payload) {
  const r = JSON.parse(payload);
  return JSON.stringify({ ...r, f: r.c * 9 / 5 + 32 });
}
`;

export function Scripts({ user }) {
  const canWrite = user.role === 'admin';
  const [editing, setEditing] = useState(null);
  const list = useProcessors('/script');
  return html`<div>
    <h2>Scripts</h2>
    <${ScriptEditor} key=${editing?.id ?? 'new'} canWrite=${canWrite} script=${editing} onDone=${() => { setEditing(null); void list.load(); }} />
    <${ProcessorTable} kind="script" list=${list} canWrite=${canWrite} onEdit=${setEditing} />
    <h2>Extensions</h2>
    <${Extensions} canWrite=${canWrite} />
  </div>`;
}

/** A kind's list (/script or /extension) and each one's runtime, refreshed. */
function useProcessors(prefix) {
  const [items, setItems] = useState(null);
  const [runtime, setRuntime] = useState({});
  const [error, setError] = useState(null);
  async function load() {
    try {
      const r = await api('POST', /** @type {'/script/query' | '/extension/query'} */ (`${prefix}/query`), { page: 1, size: 1000 });
      const counters = await Promise.all(r.data.map((x) => api('POST', /** @type {'/script/runtime' | '/extension/runtime'} */ (`${prefix}/runtime`), { id: x.id }).then((a) => [x.id, a.data], () => [x.id, null])));
      setItems(r.data);
      setRuntime(Object.fromEntries(counters));
      setError(null);
    } catch (err) {
      setError(errText('', err));
    }
  }
  usePoll(load, REFRESH_MS);
  return { items, runtime, error, setError, load, prefix };
}

/** Where a syntax error is: from /script/check's {line, column}, or a 400's "line L, column C". */
function position(r) {
  if (r.line) return { line: r.line, column: r.column ?? 1, message: r.message };
  const m = /line (\d+), column (\d+): (.*)$/s.exec(r.message ?? '');
  return m ? { line: Number(m[1]), column: Number(m[2]), message: m[3] } : null;
}

function ScriptEditor({ canWrite, script, onDone }) {
  const [name, setName] = useState(script?.name ?? '');
  const [topic, setTopic] = useState(script?.topic ?? '#');
  const [content, setContent] = useState(script?.content ?? EXAMPLE);
  const [valid, setValid] = useState(null);
  const [syntax, setSyntax] = useState(null);
  const [error, setError] = useState(null);
  const area = useRef(null);
  function showAt(p) {
    setSyntax(p);
    // Put the caret where the error is.
    const lines = content.split('\n');
    const offset = lines.slice(0, p.line - 1).reduce((n, l) => n + l.length + 1, 0) + Math.max(0, p.column - 1);
    const el = area.current;
    if (el) {
      el.focus();
      el.setSelectionRange(offset, Math.min(offset + 1, content.length));
    }
  }
  async function check() {
    setValid(null);
    setSyntax(null);
    try {
      const r = (await api('POST', '/script/check', { content })).data;
      setError(null);
      if (r.valid) setValid(true);
      else {
        const p = position(r);
        setError(p ? `check: line ${p.line}, column ${p.column}: ${p.message}` : `check: ${r.message}`);
        if (p) showAt(p);
      }
    } catch (err) {
      setError(errText('check', err));
    }
  }
  async function save(e) {
    e.preventDefault();
    setValid(null);
    setSyntax(null);
    try {
      if (script) await api('POST', '/script/update', { id: script.id, name: name.trim(), topic: topic.trim(), content });
      else await api('POST', '/script/add', { name: name.trim(), type: 'javascript', topic: topic.trim(), content });
      setError(null);
      onDone();
    } catch (err) {
      const p = err.field === 'content' ? position(err) : null;
      setError(p ? `${script ? 'save' : 'create'}: line ${p.line}, column ${p.column}: ${p.message}` : errText(script ? 'save' : 'create', err));
      if (p) showAt(p);
    }
  }
  const errLine = syntax ? content.split('\n')[syntax.line - 1] ?? '' : null;
  return html`<form class="card editor" onSubmit=${save} aria-label="script editor">
    ${script && html`<p class="muted">Editing ${script.name} (${script.id}) <button type="button" class="link" onClick=${onDone}>new script instead</button></p>`}
    <label>Script <textarea ref=${area} name="content" rows="8" spellcheck=${false} value=${content} onInput=${(e) => { setContent(e.target.value); setSyntax(null); setValid(null); }} /></label>
    ${syntax && html`<pre class="syntax" data-testid="script-error-at" aria-label="where the error is">${`${String(syntax.line).padStart(4)} | ${errLine}\n${' '.repeat(7 + Math.max(0, syntax.column - 1))}^ ${syntax.message}`}</pre>`}
    <div class="inline">
      <button type="button" onClick=${check}>Check</button>
      <span role="status">${valid ? 'compiles' : ''}</span>
    </div>
    ${canWrite && html`<div class="inline">
      <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <label>Topic filter <input name="topic" required value=${topic} onInput=${(e) => setTopic(e.target.value)} /></label>
      <button type="submit">${script ? 'Save script' : 'Create script'}</button>
    </div>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function ProcessorTable({ kind, list, canWrite, onEdit }) {
  const { items, runtime, error, setError, load, prefix } = list;
  const act = (path, body, what) => attempt(what, setError, () => api('POST', path, body), load);
  return html`<section class="card" aria-label=${kind === 'script' ? 'scripts' : 'extensions'}>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <table>
      <thead><tr><th>Name</th><th>Topic</th>${kind === 'extension' && html`<th>Class</th>`}<th>State</th><th>Messages</th><th>Converted</th><th>Unchanged</th><th>Dropped</th><th>Failed</th><th>Time (µs)</th><th>Last error</th><th></th></tr></thead>
      <tbody>${(items ?? []).map((x) => {
        const rt = runtime[x.id];
        const failed = rt ? Object.values(rt.failed ?? {}).reduce((a, b) => a + b, 0) : undefined;
        return html`<tr key=${x.id} data-processor=${x.name}>
          <td>${x.name}</td><td><code>${x.topic ?? x.config?.topic ?? '#'}</code></td>
          ${kind === 'extension' && html`<td><code>${x.config?.className ?? x.className ?? ''}</code></td>`}
          <td>${x.enabled ? 'enabled' : 'disabled'}</td>
          <td class="messages">${rt?.messages ?? '–'}</td><td class="converted">${rt?.converted ?? '–'}</td><td>${rt?.unchanged ?? '–'}</td><td>${rt?.dropped ?? '–'}</td>
          <td title=${rt ? JSON.stringify(rt.failed) : ''}>${failed ?? '–'}</td><td>${rt?.micros ?? '–'}</td>
          <td class="wrap">${rt?.lastError ?? ''}</td>
          <td>${canWrite && html`
            ${onEdit && html`<button onClick=${() => onEdit(x)}>Edit</button>`}
            <button onClick=${() => act(`${prefix}/state`, { id: x.id, enabled: !x.enabled }, x.name)}>${x.enabled ? 'Disable' : 'Enable'}</button>
            <button class="danger" onClick=${() => act(`${prefix}/delete`, { id: x.id }, x.name)}>Delete</button>`}</td>
        </tr>`;
      })}</tbody>
    </table>
    ${items && items.length === 0 && html`<p class="muted">No ${kind}s.</p>`}
  </section>`;
}

function Extensions({ canWrite }) {
  const list = useProcessors('/extension');
  const [error, setError] = useState(null);
  async function add(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    try {
      const config = { className: String(f.get('className')).trim() };
      const topic = String(f.get('topic')).trim();
      if (topic) config.topic = topic;
      const options = String(f.get('options')).trim();
      if (options) config.options = parseObject(options, 'config.options');
      await api('POST', '/extension/add', { name: String(f.get('name')).trim(), type: 'processor', config });
      setError(null);
      form.reset();
      await list.load();
    } catch (err) {
      setError(errText('add', err));
    }
  }
  return html`
    ${canWrite && html`<form class="card inline" onSubmit=${add} aria-label="add an extension">
      <label>Name <input name="name" required /></label>
      <label>Class <input name="className" required placeholder="module.mjs#Export" /></label>
      <label>Topic filter <input name="topic" placeholder="#" /></label>
      <label>Options (JSON) <input name="options" class="wide" placeholder="{}" /></label>
      <button type="submit">Add extension</button>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form>`}
    <${ProcessorTable} kind="extension" list=${list} canWrite=${canWrite} />`;
}
