// The control platform's tenants as stored (admin kinds platform-org, platform-project,
// platform-app, platform-license): organizations contain projects, projects contain
// applications (device fleets with MQTT credentials and a topic namespace), and licences grant an
// organization or one application its entitlements.

import type { RateLimit } from '../broker/rate-limit.ts';

export interface Organization {
  id: string;
  /** Topic-safe and unique; the first level of its applications' default namespaces. Fixed. */
  name: string;
  displayName: string;
  description: string;
  createTime: string;
  updateTime: string;
}

export interface Project {
  id: string;
  organizationId: string;
  /** Topic-safe, unique within the organization. */
  name: string;
  description: string;
  createTime: string;
  updateTime: string;
}

export interface Application {
  id: string;
  organizationId: string;
  projectId: string;
  /** Topic-safe, unique within the project. */
  name: string;
  description: string;
  /** Topic prefix its clients are confined to (`<prefix>/#`); never overlaps another's. */
  namespace: string;
  /** The MQTT username of its clients. */
  appKey: string;
  /** SHA-256 of the secret (the MQTT password); the secret itself is shown once. */
  secretHash: string;
  enabled: boolean;
  secretRotateTime: string;
  createTime: string;
  updateTime: string;
}

/** Features a licence may list; recorded and reported (see docs/features/platform.md: only the limits are enforced). */
export interface License {
  id: string;
  organizationId: string;
  /** null: the organization's licence (all its applications together); else one application's. */
  applicationId: string | null;
  /** Connections at once; null: no limit. */
  maxConnections: number | null;
  /** Messages received per second; null: no limit. */
  maxMessageRate: number | null;
  /** The inbound rate limit of each client of the application (of every application of the
   * organization, for the organization's licence, unless the application's own licence sets
   * one); null or absent (licences stored before it): none. */
  clientRateLimit?: RateLimit | null;
  features: string[];
  /** After it, no new connection is accepted (ISO 8601); null: never expires. */
  expires: string | null;
  description: string;
  createTime: string;
  updateTime: string;
}

/** What a tenant uses now, against its licence. */
export interface Usage {
  connections: number;
  maxConnections: number | null;
  /** Messages received in the last second. */
  messageRate: number;
  maxMessageRate: number | null;
  messagesReceived: number;
  aclDenied: number;
  throttled: number;
  quotaRefused: number;
  /** Percent of the limits used (null without a limit). */
  connectionsUsage: number | null;
  messageRateUsage: number | null;
}
