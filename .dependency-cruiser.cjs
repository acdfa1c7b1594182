// Dependency rules for src/, checked by `make typecheck` (dependency-cruiser, type-only imports
// included). See the README's Layout for the layers.
//
// Inside a worker thread data flows one way: listener -> engine/connection -> engine/handlers ->
// engine/session -> router -> store. A module may import from its own layer and the layers after
// it, never from one before it (a layer sees the one before it only through an interface it
// declares itself, e.g. handlers/client.ts, session/link.ts, RouterHost). worker/ is the
// composition root that wires the concrete classes, and nothing below it imports it.
const LAYERS = [
  'src/listener/',
  'src/engine/connection/',
  'src/engine/handlers/',
  'src/engine/session/',
  'src/router/',
  'src/store/',
];

const against = LAYERS.slice(1).map((layer, i) => ({
  name: `layer-order-${layer.replace(/^src\/|\/$/g, '').replace('/', '-')}`,
  comment: `${layer} comes after ${LAYERS.slice(0, i + 1).join(', ')} on the data path: it may not import them`,
  severity: 'error',
  from: { path: `^${layer}` },
  to: { path: `^(${LAYERS.slice(0, i + 1).join('|')})` },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles in src/, type-only imports included.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...against,
    {
      name: 'features-not-into-the-root',
      comment: "src/node/ is the main thread's root: it builds the features and the supervisor. A feature knows the supervisor only through the host interface it declares; nothing but main.ts and the admin API (over the root's Supervisor and Features types) imports the root.",
      severity: 'error',
      from: { path: '^src/(?!node/|main\\.ts|admin/)' },
      to: { path: '^src/node/' },
    },
    {
      name: 'feature-routes-meet-the-admin-api',
      comment: "A feature's routes (its *routes.ts files) are its only contact with the admin API: the rest of it runs with the admin API off.",
      severity: 'error',
      from: { path: '^src/features/[^/]+/', pathNot: 'routes\\.ts$' },
      to: { path: '^src/admin/' },
    },
    {
      name: 'features-through-their-index',
      comment: 'A feature of src/features/ uses another only through that feature\'s index.ts (what it offers others), never its inner files.',
      severity: 'error',
      from: { path: '^src/features/([^/]+)/' },
      to: { path: '^src/features/[^/]+/', pathNot: ['^src/features/$1/', '^src/features/[^/]+/index\\.ts$'] },
    },
    {
      name: 'engine-not-into-worker',
      comment: 'The worker thread wires the engine; the engine, router, store and listeners never import it.',
      severity: 'error',
      from: { path: '^src/(engine|router|store|listener|stats|protocol)/' },
      to: { path: '^src/worker/' },
    },
    {
      name: 'leaves-stay-leaves',
      comment: 'protocol/, stats/ and native/ are leaves: they import nothing of the broker but each other (and install/, where the files are).',
      severity: 'error',
      from: { path: '^src/(protocol|stats|native)/' },
      to: { path: '^src/(?!protocol/|stats/|native/|install/)' },
    },
    {
      name: 'install-is-a-leaf',
      comment: 'install/ (the install root, the version, sources or build) imports nothing of the broker, so every layer may ask it where the files are.',
      severity: 'error',
      from: { path: '^src/install/' },
      to: { path: '^src/(?!install/)' },
    },
    {
      name: 'errors-is-a-leaf',
      comment: 'errors/ (the one domain error and its codes) imports nothing, so every layer, the worker included, may import it.',
      severity: 'error',
      from: { path: '^src/errors/' },
      to: { path: '^src/(?!errors/)' },
    },
    {
      name: 'lazy-is-a-leaf',
      comment: 'lazy/ (loading a driver module on first use) imports nothing of the broker, so every feature may load its library through it.',
      severity: 'error',
      from: { path: '^src/lazy/' },
      to: { path: '^src/(?!lazy/)' },
    },
    {
      name: 'schema-is-a-leaf',
      comment: 'schema/ (checking a value against a TypeBox schema, the refusal naming the field) knows only the domain error, so any module may check its input with it.',
      severity: 'error',
      from: { path: '^src/schema/' },
      to: { path: '^src/(?!schema/|errors/)' },
    },
    {
      name: 'engine-not-into-rules',
      comment: 'The engine tells the rule engine of events through EngineEvents (engine/session/events.ts), the router (rules, log topics, bridges) through RouterHost.tapMatched, and tracing through ConnectionTracer; it never imports them.',
      severity: 'error',
      from: { path: '^src/(engine|router|listener|store)/' },
      to: { path: '^src/(rules|sources|features|policies|bridges)/' },
    },
    {
      name: 'sources-below-rules',
      comment: 'Data sources are drivers: they know the store and the log, never the rules, the admin API or the engine.',
      severity: 'error',
      from: { path: '^src/sources/' },
      to: { path: '^src/(rules|admin|engine|router|worker|listener|broker|node)/' },
    },
    {
      name: 'commands-through-the-supervisor',
      comment: 'Commands (inbound bridges) are main-thread code: they publish through the supervisor (an interface they declare), never reaching the engine, the router, a worker or the admin API.',
      severity: 'error',
      from: { path: '^src/features/commands/(?!routes\\.ts$)' },
      to: { path: '^src/(engine|router|worker|listener|admin|broker|node)/' },
    },
    {
      name: 'cluster-below-the-admin-api',
      comment: 'The cluster link (main thread) is used by the composition roots and the admin API; it never reaches into them or into a worker thread.',
      severity: 'error',
      from: { path: '^src/cluster/' },
      to: { path: '^src/(admin|engine|listener|router|threads|platform)/' },
    },
    {
      name: 'platform-below-the-admin-api',
      comment: 'The control platform (tenants, licences, alerts, channels) is used by the admin API and never reaches into it, or into a worker thread.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/(admin|engine|worker|listener|router|threads)/' },
    },
    {
      name: 'policy-worker-half',
      comment: "A worker's half of the policies asks the main thread; it never reaches the data sources, the store or the policy evaluators (the tenant counters are shared memory, a leaf).",
      severity: 'error',
      from: { path: '^src/policies/worker/' },
      to: { path: '^src/(?!auth/|policies/worker/|policies/(types|channel|params)\\.ts|broker/tenant-counters\\.ts)' },
    },
    {
      name: 'bridge-worker-half',
      comment: "A worker's half of the bridges copies matched messages to the main thread; it never reaches the bridges' clients, the store or the admin API.",
      severity: 'error',
      from: { path: '^src/bridges/worker-bridges\\.ts$' },
      to: { path: '^src/(?!broker/message\\.ts)' },
    },
    {
      name: 'bridges-not-into-admin',
      comment: 'The bridges (main thread) know the supervisor only through BridgeHost; the admin API uses them, never the other way.',
      severity: 'error',
      from: { path: '^src/bridges/' },
      to: { path: '^src/(admin|engine|router|listener)/' },
    },
    {
      name: 'notify-below-the-platform',
      comment: 'The notification channels (main thread) deliver what they are given: the admin routes and the alert engine call them; they never import the admin API, the engine, the router or a worker.',
      severity: 'error',
      from: { path: '^src/platform/notify/' },
      to: { path: '^src/(admin|engine|worker|router|listener|broker|node)/' },
    },
    {
      name: 'rule-sql-is-pure',
      comment: 'The SQL dialect (parse, compile, evaluate) knows nothing of the broker but the topic filter helpers.',
      severity: 'error',
      from: { path: '^src/rules/sql/' },
      to: { path: '^src/(?!rules/sql/|auth/topic-filter\\.ts)' },
    },
    {
      name: 'main-thread-not-into-engine',
      comment: 'The main thread (admin API, supervisor, metrics) reaches the engine only through worker operations.',
      severity: 'error',
      from: { path: '^src/(admin|metrics)/' },
      to: { path: '^src/(engine|router|listener)/', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    includeOnly: '^src/',
  },
};
