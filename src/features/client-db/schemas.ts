// Owns the TypeBox schemas of the built-in client database: the admin routes check their bodies
// with them (and document them in OpenAPI), and an import checks its documents with the same ones.
import { Type, type Static } from '@sinclair/typebox';

import { PSK_LIMITS } from '../../auth/index.ts';
import { choice, orNull, PATTERN_MESSAGE } from '../../schema/check.ts';
import { RATE_LIMIT_SCHEMA } from '../../broker/rate-limit.ts';
import { LIMITS, RULE_ACTIONS } from './types.ts';

const strict = { additionalProperties: false } as const;
const NAME = Type.String({ minLength: 1, maxLength: LIMITS.nameLength });
const TEXT = Type.String({ maxLength: LIMITS.textLength });
const PERMISSION = choice(['allow', 'deny'] as const);

export const RULE = Type.Object({
  action: choice(RULE_ACTIONS, { description: 'publish; subscribe (read: the SUBSCRIBE filter and each message delivered through a subscription granted in part); all (both); subscribe-filter (the SUBSCRIBE filter only, as Mosquitto\'s subscribePattern / subscribeLiteral)' }),
  permission: PERMISSION,
  topic: Type.String({ minLength: 1, maxLength: 65535, description: 'a topic filter; %u is the username, %c the client id' }),
  literal: Type.Optional(Type.Boolean({ description: 'subscribe-filter only: the filter must equal topic as text' })),
}, strict);

export const ROLE_REF = Type.Object({
  name: NAME,
  priority: Type.Optional(Type.Integer({ minimum: -1_000_000, maximum: 1_000_000, description: 'higher first; equal priorities keep the listed order' })),
}, strict);

const ROLES = Type.Array(ROLE_REF, { maxItems: LIMITS.rolesPerClient });
const CLIENT_RATE_LIMIT = { ...RATE_LIMIT_SCHEMA, description: "the client's inbound rate limit (throttled past it), over its roles' and its endpoint's" };
const ROLE_RATE_LIMIT = { ...RATE_LIMIT_SCHEMA, description: "its clients' inbound rate limit, over their endpoint's (a client's own, or a role of higher priority, comes first)" };
const RULES = Type.Array(RULE, { maxItems: LIMITS.rulesPerRole });
const PSK_KEY = Type.String({
  minLength: 1,
  maxLength: PSK_LIMITS.keyBytes * 2,
  pattern: '^[0-9A-Fa-f]+$',
  [PATTERN_MESSAGE]: 'hexadecimal digits only (no 0x prefix)',
  description: "TLS-PSK key in hex, as mosquitto_pub --psk takes it; the identity is the username (endpoints with sslConfig.psk.fromClientDb). A shared secret, stored as given; answered only by the export",
});

/** SCRAM credentials in RFC 5803 form, at most one per mechanism. */
const SCRAM = Type.Array(Type.String({ minLength: 1, maxLength: 2048, description: 'SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> or SCRAM-SHA-512$..., base64 (RFC 5803)' }), {
  maxItems: 2,
  description: 'ready SCRAM credentials (salted keys, RFC 5803), at most one per mechanism, for MQTT 5 SCRAM sign-in; with passwordHash or alone (a client with only these signs in with SCRAM only). A plain password makes its own',
});

export const CLIENT_CREATE = Type.Object({
  username: NAME,
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 65535, description: 'plain password, hashed with argon2id before it is stored, and made into SCRAM-SHA-256 and SCRAM-SHA-512 credentials (auth.scram.iterations); never stored or answered' })),
  passwordHash: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'a ready hash instead of password: argon2, bcrypt, or Mosquitto $7$ (PBKDF2-SHA512); no SCRAM credentials can be made from it' })),
  scram: Type.Optional(SCRAM),
  clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 65535, description: 'the client must connect with this client id' })),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  textName: Type.Optional(TEXT),
  description: Type.Optional(TEXT),
  roles: Type.Optional(ROLES),
  rateLimit: Type.Optional(CLIENT_RATE_LIMIT),
  pskKey: Type.Optional(PSK_KEY),
}, strict);
export type ClientCreate = Static<typeof CLIENT_CREATE>;

export const CLIENT_UPDATE = Type.Object({
  password: Type.Optional(CLIENT_CREATE.properties.password),
  passwordHash: Type.Optional(CLIENT_CREATE.properties.passwordHash),
  scram: Type.Optional({ ...SCRAM, description: 'ready SCRAM credentials replacing the client\'s (an empty list removes them); a new password or passwordHash without scram also replaces them (made from the password, or none)' }),
  clientId: Type.Optional(orNull(Type.String({ minLength: 1, maxLength: 65535 }))),
  enabled: Type.Optional(Type.Boolean()),
  textName: Type.Optional(orNull(TEXT)),
  description: Type.Optional(orNull(TEXT)),
  roles: Type.Optional(ROLES),
  rateLimit: Type.Optional(orNull(CLIENT_RATE_LIMIT)),
  pskKey: Type.Optional(orNull(PSK_KEY)),
}, strict);
export type ClientUpdate = Static<typeof CLIENT_UPDATE>;

export const ROLE_CREATE = Type.Object({ name: NAME, description: Type.Optional(TEXT), rules: RULES, rateLimit: Type.Optional(ROLE_RATE_LIMIT) }, strict);
export type RoleCreate = Static<typeof ROLE_CREATE>;

export const ROLE_UPDATE = Type.Object({ description: Type.Optional(orNull(TEXT)), rules: Type.Optional(RULES), rateLimit: Type.Optional(orNull(ROLE_RATE_LIMIT)) }, strict);
export type RoleUpdate = Static<typeof ROLE_UPDATE>;

export const DEFAULT_ACCESS = Type.Object({
  publish: Type.Optional(PERMISSION),
  subscribe: Type.Optional(PERMISSION),
  subscribeFilter: Type.Optional(PERMISSION),
}, strict);

export const SETTINGS = Type.Object({
  anonymousRoles: orNull(Type.Array(NAME, { maxItems: LIMITS.rolesPerClient, description: 'roles of clients without a username, in order; null: the database says nothing about them' })),
  defaultAccess: DEFAULT_ACCESS,
}, strict);

const TIME = Type.Optional(Type.String({ maxLength: 64 }));

export const CLIENT_DOC = Type.Object({
  username: NAME,
  passwordHash: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  scram: Type.Optional(SCRAM),
  clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 65535 })),
  enabled: Type.Boolean(),
  textName: Type.Optional(TEXT),
  description: Type.Optional(TEXT),
  roles: ROLES,
  rateLimit: Type.Optional(CLIENT_RATE_LIMIT),
  pskKey: Type.Optional(PSK_KEY),
  createTime: TIME,
  updateTime: TIME,
}, strict);

export const ROLE_DOC = Type.Object({ name: NAME, description: Type.Optional(TEXT), rules: RULES, rateLimit: Type.Optional(ROLE_RATE_LIMIT), createTime: TIME, updateTime: TIME }, strict);

export const EXPORT = Type.Object({
  clients: Type.Array(CLIENT_DOC, { maxItems: LIMITS.clients }),
  roles: Type.Array(ROLE_DOC, { maxItems: LIMITS.roles }),
  settings: Type.Optional(SETTINGS),
}, strict);
export type ExportBody = Static<typeof EXPORT>;

export const IMPORT_MODE = choice(['replace', 'merge'] as const, { description: 'replace: the database becomes the import; merge: clients and roles of the import replace those of the same name, the others stay' });
