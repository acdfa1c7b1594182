// @ts-check
// Auth and ACL policies (spec 4.7): the two chains in order, each policy with how it answered
// (allow, deny, ignore, error); add or change one (type, and its config in a form generated from
// the /auth/add or /acl/add route's schema, schema-form.js; checked against its source by the
// server, a refusal shown at its field), move it up or down the chain, enable, disable, delete; and the chain's
// answer for sample credentials or a topic (/auth/test, /acl/test). Refreshed every 2 s.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, errText, usePoll } from '../forms.js';
import { atField, ConfigEditor, problemOf, useConfigForm, useConfigSchemas } from '../schema-form.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

/** @typedef {'auth' | 'acl'} Kind */

const KINDS = {
  auth: { title: 'Authentication', noun: 'authentication policy' },
  acl: { title: 'ACL', noun: 'ACL policy' },
};

/** The routes of a chain (typed paths of the OpenAPI document). */
const ROUTES = /** @type {const} */ ({
  auth: { add: '/auth/add', query: '/auth/query', update: '/auth/update', delete: '/auth/delete', test: '/auth/test' },
  acl: { add: '/acl/add', query: '/acl/query', update: '/acl/update', delete: '/acl/delete', test: '/acl/test' },
});

export function Policies({ user }) {
  const canWrite = user.role === 'admin';
  return html`<div>
    <h2>Auth and ACL policies</h2>
    <p class="muted">Each chain runs in order; a policy answers allow, deny or ignore (the next one decides).
      After the chain: the static users and ACL of the configuration.</p>
    <${Chain} kind="auth" canWrite=${canWrite} />
    <${Chain} kind="acl" canWrite=${canWrite} />
  </div>`;
}

/** @param {{ kind: Kind, canWrite: boolean }} props */
function Chain({ kind, canWrite }) {
  const k = KINDS[kind];
  const r = ROUTES[kind];
  const [list, setList] = useState(null);
  const [editing, setEditing] = useState(null);
  const [error, setError] = useState(null);
  async function load() {
    try {
      setList((await api('POST', r.query, { page: 1, size: 1000 })).data);
      setError(null);
    } catch (err) {
      setError(errText('', err));
    }
  }
  usePoll(load, REFRESH_MS);
  const act = (body, what) => attempt(what, setError, () => api('POST', r.update, body), load);
  async function remove(p) {
    try {
      await api('POST', r.delete, { id: p.id });
      setError(null);
      await load();
    } catch (err) {
      setError(errText(p.name, err));
    }
  }
  /** Moves a policy one place: the chain renumbered 1, 2, 3... in its new order. */
  async function move(i, by) {
    const next = [...list];
    const [p] = next.splice(i, 1);
    next.splice(i + by, 0, p);
    try {
      for (const [n, x] of next.entries()) if (x.order !== n + 1) await api('POST', r.update, { id: x.id, order: n + 1 });
      setError(null);
    } catch (err) {
      setError(errText(p.name, err));
    }
    await load();
  }
  return html`<section class="card" aria-label=${`${k.title} policies`}>
    <h3>${k.title}</h3>
    ${canWrite && html`<${PolicyForm} key=${editing?.id ?? 'new'} kind=${kind} policy=${editing} onDone=${() => { setEditing(null); void load(); }} />`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <table>
      <thead><tr><th>#</th><th>Name</th><th>Type</th><th>State</th><th>Allow</th><th>Deny</th><th>Ignore</th><th>Error</th><th>Problem</th><th></th></tr></thead>
      <tbody>${(list ?? []).map((p, i) => html`<tr key=${p.id} data-policy=${p.name}>
        <td>${p.order}</td><td>${p.name}</td><td>${p.type}</td><td>${p.enabled ? 'enabled' : 'disabled'}</td>
        <td class="allow">${p.stats.allow}</td><td class="deny">${p.stats.deny}</td><td>${p.stats.ignore}</td><td>${p.stats.error}</td>
        <td class="wrap">${p.error ?? ''}</td>
        <td>${canWrite && html`
          <button aria-label=${`move ${p.name} up`} disabled=${i === 0} onClick=${() => move(i, -1)}>↑</button>
          <button aria-label=${`move ${p.name} down`} disabled=${i === list.length - 1} onClick=${() => move(i, 1)}>↓</button>
          <button onClick=${() => setEditing(p)}>Edit</button>
          <button onClick=${() => act({ id: p.id, enabled: !p.enabled }, p.name)}>${p.enabled ? 'Disable' : 'Enable'}</button>
          <button class="danger" onClick=${() => remove(p)}>Delete</button>`}</td>
      </tr>`)}</tbody>
    </table>
    ${list && list.length === 0 && html`<p class="muted">No ${k.noun} (the static configuration decides).</p>`}
    ${canWrite && html`<${TestChain} kind=${kind} />`}
  </section>`;
}

/** @param {{ kind: Kind, policy: any, onDone: () => void }} props */
function PolicyForm({ kind, policy, onDone }) {
  const k = KINDS[kind];
  const r = ROUTES[kind];
  const { configs, error: schemaError } = useConfigSchemas(r.add);
  const [name, setName] = useState(policy?.name ?? '');
  const [type, setType] = useState(policy?.type ?? 'http');
  const [order, setOrder] = useState(policy ? String(policy.order) : '');
  const initial = policy && type === policy.type ? policy.config : undefined;
  const form = useConfigForm(configs?.[type], initial);
  const [problem, setProblem] = useState(/** @type {{field?: string, message: string} | null} */ (null));
  function changeType(/** @type {string} */ t) {
    setType(t);
    setProblem(null);
  }
  /** Whether the config differs from the stored one (a change sends it only then: the stored
   * secrets are not shown, so a config sent again must have them typed again). */
  function edited(/** @type {any} */ config) {
    if (!policy || type !== policy.type) return true;
    return JSON.stringify(config) !== JSON.stringify(form.unchanged());
  }
  async function save(/** @type {Event} */ e) {
    e.preventDefault();
    try {
      /** @type {Record<string, any>} */
      const body = { name: name.trim(), type };
      const config = form.collect();
      if (edited(config)) body.config = config;
      if (order.trim() !== '') body.order = Number(order);
      if (policy) await api('POST', r.update, /** @type {any} */ ({ id: policy.id, ...body }));
      else await api('POST', r.add, /** @type {any} */ (body));
      setProblem(null);
      if (!policy) {
        setName('');
        form.reset();
      }
      onDone();
    } catch (err) {
      setProblem(problemOf(err));
    }
  }
  const types = Object.keys(configs ?? {});
  return html`<form class="editor" onSubmit=${save} aria-label=${policy ? `change ${policy.name}` : `add an ${k.noun}`} novalidate>
    ${policy && html`<p class="muted">Changing ${policy.name}. Its config is sent only if you edit it; passwords, secrets and
      Authorization headers are not shown (left out, or ******): type them again when you edit the config.
      <button type="button" class="link" onClick=${onDone}>Cancel</button></p>`}
    <div class="inline">
      <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <label>Type <select name="type" value=${type} onChange=${(e) => changeType(e.target.value)}>
        ${(types.length > 0 ? types : [type]).map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
      <label>Order <input name="order" type="number" min="0" value=${order} placeholder="last" onInput=${(e) => setOrder(e.target.value)} /></label>
    </div>
    ${schemaError && html`<p class="error" role="alert">${schemaError}</p>`}
    <${ConfigEditor} state=${form} problem=${problem} />
    <div class="inline"><button type="submit">${policy ? 'Save policy' : 'Add policy'}</button>
      <span class="muted">The server runs the query once against its source before saving.</span></div>
    ${problem && !atField(problem) && html`<p class="error" role="alert">${errText(policy ? 'save' : 'add', problem)}</p>`}
  </form>`;
}

function answerText(a) {
  const extra = [];
  if (a.superuser !== undefined) extra.push(`superuser: ${a.superuser}`);
  if (a.reason) extra.push(a.reason);
  if (a.error) extra.push('a policy failed');
  return `${a.result}${extra.length ? ` (${extra.join('; ')})` : ''}`;
}

/** @param {{ kind: Kind }} props */
function TestChain({ kind }) {
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  async function test(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    /** @type {Record<string, string>} */
    const body = { clientid: String(f.get('clientid')) };
    const username = String(f.get('username') ?? '');
    if (username) body.username = username;
    if (kind === 'auth') body.password = String(f.get('password') ?? '');
    else {
      body.action = String(f.get('action'));
      body.topic = String(f.get('topic'));
    }
    setResult(null);
    try {
      setResult(answerText((await api('POST', ROUTES[kind].test, /** @type {any} */ (body))).data));
      setError(null);
    } catch (err) {
      setError(errText('test', err));
    }
  }
  return html`<form class="inline test" onSubmit=${test} aria-label=${kind === 'auth' ? 'test authentication' : 'test ACL'}>
    <label>Client id <input name="clientid" required value="console-test" /></label>
    <label>Username <input name="username" autocomplete="off" /></label>
    ${kind === 'auth'
      ? html`<label>Password <input name="password" type="password" autocomplete="off" /></label>`
      : html`<label>Action <select name="action"><option>publish</option><option>subscribe</option></select></label>
        <label>Topic <input name="topic" required /></label>`}
    <button type="submit">Test</button>
    <output data-testid=${`${kind}-test-result`}>${result ?? ''}</output>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}
