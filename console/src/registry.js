// @ts-check
// The console's pages: one list of {group, id, title, page}, in the order the navigation shows
// them within their group. A new page is one import and one entry here (docs/features/console.md).
import { Overview } from './pages/overview.js';
import { Endpoints } from './pages/endpoints.js';
import { Limits } from './pages/limits.js';
import { Connections } from './pages/connections.js';
import { Messages } from './pages/publish.js';
import { Rules } from './pages/rules.js';
import { Sources } from './pages/sources.js';
import { Scripts } from './pages/scripts.js';
import { Commands } from './pages/commands.js';
import { Bridges } from './pages/bridges.js';
import { Policies } from './pages/policies.js';
import { ClientDb } from './pages/client-db.js';
import { Topics } from './pages/topics.js';
import { Users } from './pages/users.js';
import { Cluster } from './pages/cluster.js';
import { Tenants } from './pages/tenants.js';
import { Alerts } from './pages/alerts.js';
import { Channels } from './pages/channels.js';
import { Licenses } from './pages/licenses.js';
import { PlatformUsers } from './pages/platform-users.js';
import { Audit } from './pages/audit.js';
import { LiveMessages } from './pages/live-messages.js';
import { Logs } from './pages/logs.js';
import { Banned } from './pages/banned.js';
import { Sparkplug } from './pages/sparkplug.js';
import { Rewrite } from './pages/rewrite.js';
import { Schemas } from './pages/schemas.js';
import { Delayed } from './pages/delayed.js';
import { ClientPage } from './pages/client.js';
import { TopicTree } from './pages/topic-tree.js';

/** The navigation's groups, in order. */
export const GROUPS = /** @type {const} */ (['Monitor', 'Clients', 'Messaging', 'Integration', 'Access control', 'Platform', 'System']);

/** @typedef {typeof GROUPS[number]} Group */
/** @typedef {{ live: import('./live.js').Live, user: { username: string, role: string } }} PageProps */
/** @typedef {{ group: Group, id: string, title: string, page: (props: PageProps) => unknown }} PageEntry */

/** @type {PageEntry[]} */
export const PAGES = [
  { group: 'Monitor', id: 'overview', title: 'Overview', page: Overview },
  { group: 'Monitor', id: 'cluster', title: 'Cluster', page: Cluster },
  { group: 'Monitor', id: 'watch', title: 'Watch', page: LiveMessages },
  { group: 'Monitor', id: 'logs', title: 'Logs', page: Logs },
  { group: 'Clients', id: 'connections', title: 'Connections', page: Connections },
  { group: 'Clients', id: 'clients', title: 'Client', page: ClientPage },
  { group: 'Clients', id: 'banned', title: 'Banned', page: Banned },
  { group: 'Messaging', id: 'topics', title: 'Topics', page: Topics },
  { group: 'Messaging', id: 'topic-tree', title: 'Topic tree', page: TopicTree },
  { group: 'Messaging', id: 'messages', title: 'Messages', page: Messages },
  { group: 'Messaging', id: 'rewrite', title: 'Topic rewrite', page: Rewrite },
  { group: 'Messaging', id: 'delayed', title: 'Delayed', page: Delayed },
  { group: 'Messaging', id: 'schemas', title: 'Schemas', page: Schemas },
  { group: 'Messaging', id: 'sparkplug', title: 'Sparkplug', page: Sparkplug },
  { group: 'Integration', id: 'rules', title: 'Rules', page: Rules },
  { group: 'Integration', id: 'sources', title: 'Data sources', page: Sources },
  { group: 'Integration', id: 'scripts', title: 'Scripts', page: Scripts },
  { group: 'Integration', id: 'commands', title: 'Commands', page: Commands },
  { group: 'Integration', id: 'bridges', title: 'Bridges', page: Bridges },
  { group: 'Access control', id: 'policies', title: 'Auth and ACL', page: Policies },
  { group: 'Access control', id: 'client-db', title: 'Client database', page: ClientDb },
  { group: 'Platform', id: 'tenants', title: 'Tenants', page: Tenants },
  { group: 'Platform', id: 'licences', title: 'Licences', page: Licenses },
  { group: 'Platform', id: 'platform-users', title: 'Platform users', page: PlatformUsers },
  { group: 'Platform', id: 'alerts', title: 'Alerts', page: Alerts },
  { group: 'Platform', id: 'channels', title: 'Channels', page: Channels },
  { group: 'System', id: 'endpoints', title: 'Endpoints', page: Endpoints },
  { group: 'System', id: 'limits', title: 'Limits', page: Limits },
  { group: 'System', id: 'users', title: 'Users', page: Users },
  { group: 'System', id: 'audit', title: 'Audit log', page: Audit },
];
