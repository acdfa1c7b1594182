// Auth and ACL policies (spec 4.7): the two chains in order, each policy with how it answered
// (allow, deny, ignore, error); add or change one (type, config as JSON from a template per type,
// the fields of an LDAP config listed under it, checked against its source by the server), move it up or down the chain, enable, disable, delete; and the chain's
// answer for sample credentials or a topic (/auth/test, /acl/test). Refreshed every 2 s.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, errText, parseObject, pretty, usePoll } from '../forms.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

const KINDS = {
  auth: {
    title: 'Authentication',
    noun: 'authentication policy',
    types: ['http', 'database', 'jwt', 'ldap'],
    templates: {
      http: { url: 'http://127.0.0.1:8000/mqtt/auth', method: 'POST', timeout: 5000 },
      database: { source: '<a data source id>', sql: 'SELECT password_hash, salt, is_superuser FROM mqtt_user WHERE username = ${username} LIMIT 1', passwordHash: { strategy: 'sha256', saltType: 'suffix' } },
      jwt: { secret: 'change-me', verifyClaims: { sub: '${username}' } },
      ldap: {
        urls: 'ldap://127.0.0.1:389',
        startTls: false,
        service: { dn: 'cn=mqtt-svc,dc=example,dc=org', password: 'change-me' },
        mode: 'search',
        base: 'ou=people,dc=example,dc=org',
        filter: '(&(objectClass=inetOrgPerson)(uid=${username}))',
      },
    },
  },
  acl: {
    title: 'ACL',
    noun: 'ACL policy',
    types: ['http', 'database', 'ldap'],
    templates: {
      http: { url: 'http://127.0.0.1:8000/mqtt/acl', method: 'POST', timeout: 5000 },
      database: { source: '<a data source id>', sql: 'SELECT permission, action, topic FROM mqtt_acl WHERE username = ${username} ORDER BY id' },
      ldap: {
        urls: 'ldap://127.0.0.1:389',
        service: { dn: 'cn=mqtt-svc,dc=example,dc=org', password: 'change-me' },
        mode: 'bind',
        userDn: 'uid=${username},ou=people,dc=example,dc=org',
        groups: { base: 'ou=groups,dc=example,dc=org', filter: '(&(objectClass=groupOfNames)(member=${dn}))' },
        groupRules: [{ group: 'sensors', rules: [{ permission: 'allow', action: 'publish', topic: 'sensors/%u/#' }, { permission: 'allow', action: 'subscribe', topic: 'sensors/#' }] }],
      },
    },
  },
};

/** The fields a type's config takes, shown under the config box. */
const FIELDS = {
  ldap: {
    auth: 'urls (ldap:// or ldaps://, a list for failover), startTls, tls {caFile | ca, rejectUnauthorized}, connectTimeout, timeout (ms), poolSize, '
      + 'service {dn, password}; mode "bind" with userDn, or "search" with base, filter, scope; groups {base, filter} or {attribute}; superuserAttribute, superuserGroups. '
      + 'An empty password is always refused.',
    acl: 'urls, startTls, tls, connectTimeout, timeout, poolSize, service {dn, password}; mode "bind" with userDn, or "search" with base, filter, scope; '
      + 'groups {base, filter (${dn}: the user\'s DN)} or {attribute: "memberOf"}; groupRules [{group (a DN or a cn), rules [{permission, action, topic}]}], '
      + 'groupCacheTtl (s), groupCacheSize.',
  },
};

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

function Chain({ kind, canWrite }) {
  const k = KINDS[kind];
  const [list, setList] = useState(null);
  const [editing, setEditing] = useState(null);
  const [error, setError] = useState(null);
  async function load() {
    try {
      setList((await api('POST', `/${kind}/query`, { page: 1, size: 1000 })).data);
      setError(null);
    } catch (err) {
      setError(errText('', err));
    }
  }
  usePoll(load, REFRESH_MS);
  const act = (body, what) => attempt(what, setError, () => api('POST', `/${kind}/update`, body), load);
  async function remove(p) {
    try {
      await api('POST', `/${kind}/delete`, { id: p.id });
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
      for (const [n, x] of next.entries()) if (x.order !== n + 1) await api('POST', `/${kind}/update`, { id: x.id, order: n + 1 });
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

function PolicyForm({ kind, policy, onDone }) {
  const k = KINDS[kind];
  const [name, setName] = useState(policy?.name ?? '');
  const [type, setType] = useState(policy?.type ?? 'http');
  const [order, setOrder] = useState(policy ? String(policy.order) : '');
  const [config, setConfig] = useState(pretty(policy?.config ?? k.templates.http));
  const [error, setError] = useState(null);
  function changeType(t) {
    if (config === pretty(k.templates[type] ?? {})) setConfig(pretty(k.templates[t] ?? {}));
    setType(t);
  }
  async function save(e) {
    e.preventDefault();
    try {
      const body = { name: name.trim(), type };
      // A change leaves the stored config (with its secrets) alone unless it was edited.
      if (!policy || type !== policy.type || config !== pretty(policy.config)) body.config = parseObject(config);
      if (order.trim() !== '') body.order = Number(order);
      if (policy) await api('POST', `/${kind}/update`, { id: policy.id, ...body });
      else await api('POST', `/${kind}/add`, body);
      setError(null);
      if (!policy) setName('');
      onDone();
    } catch (err) {
      setError(errText(policy ? 'save' : 'add', err));
    }
  }
  return html`<form class="editor" onSubmit=${save} aria-label=${policy ? `change ${policy.name}` : `add an ${k.noun}`}>
    ${policy && html`<p class="muted">Changing ${policy.name}. Its config is sent only if you edit it; passwords, secrets and
      Authorization headers are not shown (left out, or ******): type them again when you edit the config.
      <button type="button" class="link" onClick=${onDone}>Cancel</button></p>`}
    <div class="inline">
      <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <label>Type <select name="type" value=${type} onChange=${(e) => changeType(e.target.value)}>
        ${k.types.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
      <label>Order <input name="order" type="number" min="0" value=${order} placeholder="last" onInput=${(e) => setOrder(e.target.value)} /></label>
    </div>
    <label>Config (JSON) <textarea name="config" rows=${type === 'ldap' ? 12 : 5} spellcheck=${false} value=${config} onInput=${(e) => setConfig(e.target.value)} /></label>
    ${FIELDS[type]?.[kind] && html`<p class="muted" data-testid="config-fields">Fields: ${FIELDS[type][kind]}</p>`}
    <div class="inline"><button type="submit">${policy ? 'Save policy' : 'Add policy'}</button>
      <span class="muted">The server runs the query once against its source before saving.</span></div>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function answerText(a) {
  const extra = [];
  if (a.superuser !== undefined) extra.push(`superuser: ${a.superuser}`);
  if (a.reason) extra.push(a.reason);
  if (a.error) extra.push('a policy failed');
  return `${a.result}${extra.length ? ` (${extra.join('; ')})` : ''}`;
}

function TestChain({ kind }) {
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  async function test(e) {
    e.preventDefault();
    const f = new FormData(e.target);
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
      setResult(answerText((await api('POST', `/${kind}/test`, body)).data));
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
