// The routes of the admin API spec, section by section, as data: the method and path of every row
// of the spec's endpoint tables (and the path of variant B where a row gives one). Copied from the
// spec the admin API was built to ("Message Broker Administration API", documented version label
// 2.1.2, section "Endpoints", tables 4.1 to 4.12), which is not part of this repository. Section
// 4.12 lists only its two auth routes as rows; its other modules are path prefixes in the spec's
// prose. test/admin/api-docs.test.ts checks the docs/api pages and the routed paths against it.

export interface SpecRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** The variant B path (port-keyed, under /api) of a 4.1 row. */
  variantB?: string;
}

export interface SpecSection {
  section: string;
  title: string;
  routes: SpecRoute[];
}

export const SPEC_SECTIONS: SpecSection[] = [
  {
    section: '4.1',
    title: 'Listener (endpoint) management',
    routes: [
      { method: 'POST', path: '/endpoints/add', variantB: '/api/endpoints/add' },
      { method: 'POST', path: '/endpoints/update', variantB: '/api/endpoints/update' },
      { method: 'POST', path: '/endpoints/remove', variantB: '/api/endpoints/remove' },
      { method: 'GET', path: '/endpoints/list', variantB: '/api/endpoints/list' },
      { method: 'GET', path: '/endpoints/status', variantB: '/api/endpoints/status' },
      { method: 'GET', path: '/endpoints/check-port', variantB: '/api/endpoints/check-port' },
      { method: 'GET', path: '/api/endpoints/metrics' },
    ],
  },
  {
    section: '4.2',
    title: 'System',
    routes: [
      { method: 'GET', path: '/system/config' },
      { method: 'GET', path: '/health' },
      { method: 'GET', path: '/public/cluster' },
      { method: 'GET', path: '/system/config/export' },
      { method: 'POST', path: '/api/system/config/import' },
    ],
  },
  {
    section: '4.3',
    title: 'Connections and publishing',
    routes: [
      { method: 'POST', path: '/mqtt/connection' },
      { method: 'POST', path: '/mqtt/connection/close' },
      { method: 'POST', path: '/mqtt/connection/down' },
      { method: 'POST', path: '/mqtt/connection/runtime' },
      { method: 'POST', path: '/api/mqtt/connection' },
      { method: 'POST', path: '/api/publish' },
      { method: 'POST', path: '/api/check' },
      { method: 'POST', path: '/api/close' },
    ],
  },
  {
    section: '4.4',
    title: 'Topics and subscriptions',
    routes: [
      { method: 'POST', path: '/topic/query' },
      { method: 'POST', path: '/topic/connect/query' },
      { method: 'POST', path: '/api/local/subscribe' },
      { method: 'POST', path: '/mqtt/connection/subscribe' },
      { method: 'POST', path: '/mqtt/proxy/subscribe/add' },
      { method: 'POST', path: '/mqtt/proxy/subscribe/status' },
      { method: 'POST', path: '/mqtt/proxy/subscribe/delete' },
    ],
  },
  {
    section: '4.5',
    title: 'Rule engine',
    routes: [
      { method: 'POST', path: '/rule/add' },
      { method: 'POST', path: '/rule/query' },
      { method: 'POST', path: '/rule/delete' },
      { method: 'POST', path: '/rule/state/set' },
      { method: 'POST', path: '/rule/test' },
      { method: 'POST', path: '/rule/runtime' },
      { method: 'POST', path: '/rule/sql' },
      { method: 'POST', path: '/rule/actions' },
    ],
  },
  {
    section: '4.6',
    title: 'Data sources',
    routes: [
      { method: 'POST', path: '/source/add' },
      { method: 'POST', path: '/source/query' },
      { method: 'POST', path: '/source/delete' },
      { method: 'GET', path: '/source/type' },
      { method: 'POST', path: '/source/check' },
      { method: 'POST', path: '/source/query/info' },
      { method: 'POST', path: '/source/query/delete' },
    ],
  },
  {
    section: '4.7',
    title: 'Authentication policies and ACL policies',
    routes: [
      { method: 'POST', path: '/auth/add' },
      { method: 'POST', path: '/auth/query' },
      { method: 'POST', path: '/auth/delete' },
      { method: 'POST', path: '/auth/password/encrypt' },
      { method: 'POST', path: '/auth/salt/type' },
      { method: 'POST', path: '/acl/add' },
      { method: 'POST', path: '/acl/query' },
      { method: 'POST', path: '/acl/delete' },
    ],
  },
  {
    section: '4.8',
    title: 'Logs',
    routes: [
      { method: 'POST', path: '/log/query' },
      { method: 'POST', path: '/log/add' },
      { method: 'POST', path: '/log/delete' },
      { method: 'POST', path: '/log/download' },
      { method: 'POST', path: '/log/remote/query' },
      { method: 'GET', path: '/api/log/topics' },
      { method: 'POST', path: '/api/log/topic/add' },
      { method: 'POST', path: '/api/log/topic/delete' },
    ],
  },
  {
    section: '4.9',
    title: 'Scripts, commands, extensions',
    routes: [
      { method: 'POST', path: '/script/add' },
      { method: 'POST', path: '/script/query' },
      { method: 'POST', path: '/script/delete' },
      { method: 'POST', path: '/script/state' },
      { method: 'POST', path: '/script/check' },
      { method: 'GET', path: '/command/type' },
      { method: 'POST', path: '/command/add' },
      { method: 'POST', path: '/extension/add' },
    ],
  },
  {
    section: '4.10',
    title: 'Monitoring, sessions, retained messages',
    routes: [
      { method: 'GET', path: '/prometheus' },
      { method: 'GET', path: '/monitor/dashboard' },
      { method: 'POST', path: '/monitor/dashboard' },
      { method: 'POST', path: '/mqtt/session/query' },
      { method: 'POST', path: '/mqtt/session/clear' },
      { method: 'POST', path: '/mqtt/retain/query' },
      { method: 'POST', path: '/mqtt/retain/delete' },
    ],
  },
  {
    section: '4.11',
    title: 'Public and licence',
    routes: [
      { method: 'POST', path: '/public/login' },
      { method: 'GET', path: '/public/license' },
      { method: 'POST', path: '/license/import' },
      { method: 'POST', path: '/license/refresh' },
    ],
  },
  {
    section: '4.12',
    title: 'Control platform (prefix /api/v1)',
    routes: [
      { method: 'POST', path: '/api/v1/auth/login' },
      { method: 'GET', path: '/api/v1/auth/me' },
    ],
  },
];
