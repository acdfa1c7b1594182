// Owns the shapes of what the control platform's tenants and licences take: one TypeBox schema per
// input, checked by the directories themselves (tenants.ts, licenses.ts) and by the /api/v1 routes
// before them (their OpenAPI document too). A refusal is a PlatformError naming the field. A null
// optional field keeps the stored value (a licence's limits and expiry: null is none). Names and
// namespaces (topic-safe, unique) stay the directories' checks.
import { Type, type Static, type TSchema } from '@sinclair/typebox';

import { compileSchema, orNull, type Checker } from '../schema/check.ts';
import { RATE_LIMIT_SCHEMA } from '../broker/rate-limit.ts';
import { PlatformError } from './errors.ts';

export const MAX_CONNECTIONS = 10_000_000;
export const MAX_RATE = 100_000_000;

const strict = { additionalProperties: false } as const;
const DESCRIPTION = Type.Optional(orNull(Type.String({ maxLength: 1024 })));
const NAME = Type.String({ description: 'topic-safe: the level of the namespace it names' });

export const ORGANIZATION_INPUT = Type.Object(
  { name: NAME, displayName: Type.Optional(orNull(Type.String({ maxLength: 128, description: 'default: the name' }))), description: DESCRIPTION },
  strict,
);
/** The name is fixed: given, it must be the same. */
export const ORGANIZATION_CHANGE = Type.Partial(ORGANIZATION_INPUT, strict);

export const PROJECT_INPUT = Type.Object(
  { organizationId: Type.Optional(Type.String({ description: "default: a tenant user's own" })), name: NAME, description: DESCRIPTION },
  strict,
);
export const PROJECT_CHANGE = Type.Partial(PROJECT_INPUT, strict);

export const APPLICATION_INPUT = Type.Object(
  {
    projectId: Type.String(),
    name: NAME,
    description: DESCRIPTION,
    namespace: Type.Optional(orNull(Type.String({ description: 'default <org>/<project>/<app>/#; under <org>/ unless SystemAdmin' }))),
    enabled: Type.Optional(orNull(Type.Boolean({ description: 'default true' }))),
  },
  strict,
);
export const APPLICATION_CHANGE = Type.Partial(APPLICATION_INPUT, strict);

export const LICENSE_INPUT = Type.Object(
  {
    organizationId: Type.Optional(Type.String({ description: "default: the application's" })),
    applicationId: Type.Optional(orNull(Type.String({ description: 'null or absent: the whole organization' }))),
    maxConnections: Type.Optional(orNull(Type.Integer({ minimum: 0, maximum: MAX_CONNECTIONS, description: 'null: no limit' }))),
    maxMessageRate: Type.Optional(orNull(Type.Integer({ minimum: 1, maximum: MAX_RATE, description: 'per second; null: no limit' }))),
    clientRateLimit: Type.Optional(orNull({ ...RATE_LIMIT_SCHEMA, description: 'inbound rate limit of each client of the application (of every application of an organization licence, unless its own licence sets one): {messagesPerSecond, messagesBurst, bytesPerSecond, bytesBurst}; past it the client is throttled; null: none' })),
    features: Type.Optional(orNull(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 64 }))),
    expires: Type.Optional(orNull(Type.String({ description: 'ISO 8601; null: never' }))),
    description: DESCRIPTION,
  },
  strict,
);
/** The organization and application are fixed: given, they must be the same. */
export const LICENSE_CHANGE = LICENSE_INPUT;

export type OrganizationInput = Static<typeof ORGANIZATION_INPUT>;
export type OrganizationChange = Static<typeof ORGANIZATION_CHANGE>;
export type ProjectInput = Static<typeof PROJECT_INPUT>;
export type ProjectChange = Static<typeof PROJECT_CHANGE>;
export type ApplicationInput = Static<typeof APPLICATION_INPUT>;
export type ApplicationChange = Static<typeof APPLICATION_CHANGE>;
export type LicenseInput = Static<typeof LICENSE_INPUT>;

function checker<S extends TSchema>(schema: S): Checker<Static<S>> {
  return compileSchema(schema, { refuse: (field, reason) => new PlatformError(400, reason, field) });
}

export const checkOrganization: Checker<OrganizationInput> = checker(ORGANIZATION_INPUT);
export const checkOrganizationChange: Checker<OrganizationChange> = checker(ORGANIZATION_CHANGE);
export const checkProject: Checker<ProjectInput> = checker(PROJECT_INPUT);
export const checkProjectChange: Checker<ProjectChange> = checker(PROJECT_CHANGE);
export const checkApplication: Checker<ApplicationInput> = checker(APPLICATION_INPUT);
export const checkApplicationChange: Checker<ApplicationChange> = checker(APPLICATION_CHANGE);
export const checkLicense: Checker<LicenseInput> = checker(LICENSE_INPUT);
