// @ts-check
// Topic tree: the subscribed topic filters (/topic/query: every session, online or offline, of
// every node) and the retained topics (/mqtt/retain/query) as one tree by topic level, each level
// with the subscribers of the filters that end there, its retained message, and its subtree's
// totals; collapsible, only what is open is drawn. Read in pages of 1000, at most MAX_ITEMS of
// each; more is said, not hidden.
//
// Rates come from topic metrics (GET /api/topic-metrics, read again every RATES_MS while the page
// is open; the tree itself only on Refresh): a level whose path has a topic metric, as the exact
// topic or as `path/#`, shows that filter's message rates in and out and its payload bytes rates
// (per second over the broker's last 30 s, every node summed). Measuring is opt-in per level and bounded by
// topicMetrics.max: "Measure rate" adds the topic metric `path/#` (the level and every topic below
// it; a level `#` is measured as its own filter) through POST /api/topic-metrics, a refusal (409
// past the bound, any 4xx) shown beside the level; "Stop measuring" deletes it (DELETE
// /api/topic-metrics/{filter}) after a confirmation. Admins only; viewers see the rates.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { errText } from '../forms.js';

const html = htm.bind(h);
const PAGE = 1000;
/** The topic metrics (the rates) read again this often while the page is open. */
export const RATES_MS = 3000;
/** Subscribed filters, and retained topics, read at most. */
export const MAX_ITEMS = 20_000;

/** Every item of a paged POST query, up to MAX_ITEMS: {items, total}. */
async function all(path, body = {}) {
  const items = [];
  let total = 0;
  for (let page = 1; items.length < MAX_ITEMS; page++) {
    const r = await api('POST', path, { ...body, page, size: PAGE });
    total = r.total;
    items.push(...r.data);
    if (r.data.length < PAGE || items.length >= total) break;
  }
  return { items: items.slice(0, MAX_ITEMS), total };
}

/** @param {string} name @param {string} path */
function node(name, path) {
  return { name, path, children: new Map(), subscribers: 0, filters: [], retained: null, totalSubscribers: 0, totalFilters: 0, totalRetained: 0 };
}

/** The tree of `filters` ({topic, subscribers}) and `retained` ({topic, ...}) by level; a shared
 * subscription ($share/{group}/{filter}) is placed at its filter. */
export function buildTree(filters, retained) {
  const root = node('', '');
  const at = (topic) => {
    let n = root;
    for (const level of topic.split('/')) {
      let c = n.children.get(level);
      if (!c) {
        c = node(level, n.path === '' && n === root ? level : `${n.path}/${level}`);
        n.children.set(level, c);
      }
      n = c;
    }
    return n;
  };
  for (const f of filters) {
    const shared = /^\$(?:share\/([^/]+)|queue)\/(.+)$/.exec(f.topic);
    const n = at(shared ? shared[2] : f.topic);
    n.subscribers += f.subscribers;
    n.filters.push(shared ? { filter: f.topic, group: shared[1] ?? '$queue', subscribers: f.subscribers } : { filter: f.topic, subscribers: f.subscribers });
  }
  for (const m of retained) at(m.topic).retained = m;
  const sum = (n) => {
    n.totalSubscribers = n.subscribers;
    n.totalFilters = n.filters.length;
    n.totalRetained = n.retained ? 1 : 0;
    for (const c of n.children.values()) {
      sum(c);
      n.totalSubscribers += c.totalSubscribers;
      n.totalFilters += c.totalFilters;
      n.totalRetained += c.totalRetained;
    }
  };
  sum(root);
  return root;
}

/** The topic metric "Measure rate" adds for the level at `path` named `name`: `path/#` (the level
 * and every topic below it), or the path itself for a level `#`. */
export function measuredFilter(name, path) {
  return name === '#' ? path : `${path}/#`;
}

/** The topic metrics that measure the level at `path` (named `name`), from `byFilter`: `path/#`
 * first, then the exact topic `path`. */
function metricsOf(byFilter, name, path) {
  if (!byFilter) return [];
  const out = [];
  const wide = byFilter.get(measuredFilter(name, path));
  if (wide) out.push(wide);
  const exact = name === '#' ? undefined : byFilter.get(path);
  if (exact) out.push(exact);
  return out;
}

/** The node of `tree` at `path` (undefined when the tree has none). */
function nodeAt(tree, path) {
  let n = tree;
  for (const level of path.split('/')) {
    n = n.children.get(level);
    if (!n) return undefined;
  }
  return n;
}

/** `r` with 3 significant digits at most (2 decimals at most). */
function short(/** @type {number} */ r) {
  return String(Number(r.toFixed(r >= 100 ? 0 : r >= 10 ? 1 : 2)));
}

/** A rate per second; bytes in B/s, kB/s or MB/s. */
function perSecond(/** @type {number} */ r, bytes = false) {
  if (!bytes) return `${short(r)}/s`;
  if (r >= 1e6) return `${short(r / 1e6)} MB/s`;
  if (r >= 1e3) return `${short(r / 1e3)} kB/s`;
  return `${short(r)} B/s`;
}

export function TopicTree({ user }) {
  const [tree, setTree] = useState(null);
  const [sizes, setSizes] = useState(null);
  const [error, setError] = useState(null);
  const [open, setOpen] = useState(() => new Set());
  const [busy, setBusy] = useState(false);
  /** @type {[Map<string, any> | null, (m: Map<string, any>) => void]} the topic metrics by filter */
  const [metrics, setMetrics] = useState(null);
  const [ratesError, setRatesError] = useState(null);
  /** @type {[Map<string, string>, (f: (m: Map<string, string>) => Map<string, string>) => void]} a refused action, by the path of its level */
  const [nodeErrors, setNodeErrors] = useState(() => new Map());
  /** @type {[Set<string>, (f: (s: Set<string>) => Set<string>) => void]} levels with an action under way */
  const [pending, setPending] = useState(() => new Set());
  const canWrite = user?.role === 'admin';
  async function load() {
    setBusy(true);
    try {
      const [f, r] = await Promise.all([all('/topic/query'), all('/mqtt/retain/query'), loadRates()]);
      setTree(buildTree(f.items, r.items));
      setSizes({ filters: f.items.length, filtersTotal: f.total, retained: r.items.length, retainedTotal: r.total });
      setError(null);
    } catch (err) {
      setError(errText('', err));
    } finally {
      setBusy(false);
    }
  }
  async function loadRates() {
    try {
      const list = (await api('GET', '/api/topic-metrics')).data;
      setMetrics(new Map(list.map((t) => [t.filter, t])));
      setRatesError(null);
    } catch (err) {
      setRatesError(errText('topic metrics (the rates)', err));
    }
  }
  useEffect(() => {
    void load();
    const t = setInterval(loadRates, RATES_MS);
    return () => clearInterval(t);
  }, []);
  const toggle = (path) => setOpen((s) => {
    const next = new Set(s);
    if (next.has(path)) next.delete(path);
    else next.add(path);
    return next;
  });
  function expandAll() {
    const next = new Set();
    const walk = (n) => {
      if (n.children.size === 0) return;
      next.add(n.path);
      for (const c of n.children.values()) walk(c);
    };
    for (const c of tree.children.values()) walk(c);
    setOpen(next);
  }
  /** Runs an action on the level at `path`: its refusal shown beside the level, the rates read again. */
  async function act(path, what, call) {
    setPending((s) => new Set(s).add(path));
    try {
      await call();
      setNodeErrors((m) => {
        const next = new Map(m);
        next.delete(path);
        return next;
      });
      await loadRates();
    } catch (err) {
      const status = err?.status ? ` (${err.status})` : '';
      setNodeErrors((m) => new Map(m).set(path, errText(`${what}${status}`, err)));
    } finally {
      setPending((s) => {
        const next = new Set(s);
        next.delete(path);
        return next;
      });
    }
  }
  const measure = (n) => act(n.path, 'measure rate', () => api('POST', '/api/topic-metrics', { filter: measuredFilter(n.name, n.path) }));
  const stop = (path, filter) => {
    if (!window.confirm(`Stop measuring ${filter}? Its topic metrics (counts and rates) are deleted, on every node.`)) return;
    void act(path, 'stop measuring', () => api('DELETE', '/api/topic-metrics/{filter}', {}, { params: { filter } }));
  };
  const ctx = { open, toggle, metrics, canWrite, nodeErrors, pending, measure, stop };
  const outside = tree && metrics ? [...metrics.values()].filter((t) => {
    const base = t.filter.endsWith('/#') ? t.filter.slice(0, -2) : t.filter;
    return !nodeAt(tree, base) && !nodeAt(tree, t.filter);
  }) : [];
  return html`<div>
    <h2>Topic tree</h2>
    <p class="inline-bar">
      <button onClick=${load} disabled=${busy}>Refresh</button>
      <button onClick=${expandAll} disabled=${!tree}>Expand all</button>
      <button onClick=${() => setOpen(new Set())}>Collapse all</button>
    </p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${ratesError && html`<p class="error" role="alert">${ratesError}</p>`}
    ${sizes && html`<p class="muted" data-testid="tree-sizes">${sizes.filtersTotal} subscribed filters (client sessions of every node, online or offline) and ${sizes.retainedTotal} retained topics (not $SYS).${' '}
      ${sizes.filters < sizes.filtersTotal || sizes.retained < sizes.retainedTotal ? ` The tree shows the first ${sizes.filters} filters and ${sizes.retained} retained topics (at most ${MAX_ITEMS.toLocaleString()} of each). ` : ''}
      The counts are subscribers and retained messages (read again on Refresh).</p>`}
    ${sizes && html`<p class="muted" data-testid="tree-rates-note">Rates come from topic metrics, measured only for the levels asked for: a level measured shows the filter it is
      measured by (<code>level/#</code>: the level and every topic below it; or the exact topic) with its messages per second in (from publishers) and out (to subscribers)
      and their payload bytes per second, over the last 30 s on every node, read again every ${RATES_MS / 1000} s.${' '}
      ${canWrite ? html`"Measure rate" adds the topic metric <code>level/#</code> (a level <code>#</code>: itself); "Stop measuring" removes it.${' '}` : ''}
      Topic metrics are bounded by <code>topicMetrics.max</code> (${metrics ? `${metrics.size} in use` : 'in use: unknown'}); they are all on the Topic metrics page.</p>`}
    ${tree && html`<section class="card" aria-label="topic tree">
      <table class="tree">
        <thead><tr><th>Topic level</th><th>Subscribers here</th><th>Filters below</th><th>Subscribers below</th><th>Retained below</th><th>Retained here</th><th>Rates (topic metrics)</th></tr></thead>
        <tbody>${rows(tree, 0, ctx)}</tbody>
      </table>
      ${tree.children.size === 0 && html`<p class="muted">No subscribed filter and no retained message.</p>`}
    </section>`}
    ${outside.length > 0 && html`<section class="card" aria-label="measured filters outside the tree">
      <p class="muted">Topic metrics whose filter has no level in the tree (no subscription and no retained message there):</p>
      <ul>${outside.map((t) => html`<li key=${t.filter} data-filter=${t.filter}><${Rates} t=${t} /></li>`)}</ul>
    </section>`}
  </div>`;
}

/** One topic metric's rates, labelled with its filter (and `children`: its button). */
function Rates({ t, children = null }) {
  const m = t.metrics;
  return html`<span class="rate-line">filter <code>${t.filter}</code>${t.source === 'config' ? html` <span class="muted">(config)</span>` : null}</span>
    <span class="rate-line">messages in <span data-col="rate-in">${perSecond(m.messages.in.rate)}</span>, out <span data-col="rate-out">${perSecond(m.messages.out.rate)}</span></span>
    <span class="rate-line">bytes in <span data-col="bytes-in">${perSecond(m.bytes.in.rate, true)}</span>, out <span data-col="bytes-out">${perSecond(m.bytes.out.rate, true)}</span></span>
    ${children}`;
}

/** The rows of `parent`'s children, and of their children when open (by name; '#' and '+' last):
 * collapsed subtrees are not drawn, so a refresh of the rates redraws only the open rows. */
function rows(parent, depth, ctx) {
  const { open, toggle, metrics, canWrite, nodeErrors, pending, measure, stop } = ctx;
  const order = (a, b) => (wild(a.name) - wild(b.name)) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const out = [];
  for (const n of [...parent.children.values()].sort(order)) {
    const isOpen = open.has(n.path);
    const measured = metricsOf(metrics, n.name, n.path);
    const refusal = nodeErrors.get(n.path);
    const busy = pending.has(n.path);
    out.push(html`<tr key=${n.path} data-path=${n.path}>
      <td style=${`padding-left: ${0.5 + depth * 1.25}rem`}>
        ${n.children.size > 0
          ? html`<button class="link" aria-expanded=${isOpen} aria-label=${`${isOpen ? 'collapse' : 'expand'} ${n.path}`} onClick=${() => toggle(n.path)}>${isOpen ? '▾' : '▸'}</button> `
          : html`<span aria-hidden="true">· </span>`}
        <code>${n.name === '' ? '(empty level)' : n.name}</code>
        ${n.filters.filter((f) => f.group).map((f) => html` <span class="muted">shared (${f.group}): ${f.subscribers}</span>`)}
      </td>
      <td class="subscribers">${n.subscribers || ''}</td><td>${n.totalFilters}</td><td>${n.totalSubscribers}</td><td>${n.totalRetained}</td>
      <td class="payload">${n.retained ? html`<code>${String(n.retained.payload ?? '').slice(0, 40)}</code>` : ''}</td>
      <td class="rates">
        ${measured.map((t) => html`<div key=${t.filter} data-filter=${t.filter}><${Rates} t=${t}>
          ${canWrite && t.source === 'api' && html`<button type="button" class="link" disabled=${busy} title=${`Delete the topic metric ${t.filter}`} onClick=${() => stop(n.path, t.filter)}>Stop measuring</button>`}<//></div>`)}
        ${canWrite && metrics && measured.length === 0 && html`<button type="button" class="link" disabled=${busy}
          title=${`Add the topic metric ${measuredFilter(n.name, n.path)}${n.name === '#' ? '' : ': this level and every topic below it'}`}
          onClick=${() => measure(n)}>Measure rate</button> <span class="muted">(<code>${measuredFilter(n.name, n.path)}</code>)</span>`}
        ${refusal && html`<p class="error" role="alert">${refusal}</p>`}
      </td>
    </tr>`);
    if (isOpen) out.push(...rows(n, depth + 1, ctx));
  }
  return out;
}

function wild(name) {
  return name === '#' ? 2 : name === '+' ? 1 : 0;
}
