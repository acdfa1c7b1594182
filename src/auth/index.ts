// Owns the public surface of authentication and authorization.
export type { AclGrant, Action, AuthContinuation, AuthExchangeRequest, AuthMethod, AuthStep, AuthRequest, AuthResult, Authenticator, Authorizer, ClientIdentity } from './types.ts';
export { AuthError, type AuthErrorCode } from './errors.ts';
export { StaticAuthenticator, type StaticAuthenticatorOptions, type StaticUser } from './static-authenticator.ts';
export { StaticAuthorizer, subscriptionFilter, type AclRule, type StaticAuthorizerOptions } from './static-authorizer.ts';
export { hashPassword, verifyPassword, hashAlgorithmOf, passwordHashProblem, DEFAULT_BCRYPT_COST, type PasswordAlgorithm } from './password.ts';
export { matches, covers, topicFilterProblem, topicNameProblem } from './topic-filter.ts';
export { aclPatternProblem } from './acl-pattern.ts';
export { parsePasswdFile, parseMosquittoHash, verifyMosquittoHash, type MosquittoHash, type PasswdFile } from './mosquitto/passwd-file.ts';
export { parseAclFile, aclFileAllows, type AclFile, type AclFileRule, type AclAccess } from './mosquitto/acl-file.ts';
export { parsePskFile, pskKeyBytes, pskKeyProblem, PSK_LIMITS, type PskFile } from './mosquitto/psk-file.ts';
export { ReloadableFile } from './mosquitto/reloadable-file.ts';
export { MosquittoFileError, type MosquittoFileErrorCode } from './mosquitto/errors.ts';
export {
  SCRAM_MECHANISMS, SCRAM_MECHANISM_NAMES, MIN_ITERATIONS as SCRAM_MIN_ITERATIONS, MAX_ITERATIONS as SCRAM_MAX_ITERATIONS,
  isScramMechanism, parseScramCredentials, formatScramCredentials, deriveScramCredentials, credentialsProblem as scramCredentialsProblem, mechanismOf as scramMechanismOf, strictBase64,
  type ScramCredentials, type ScramMechanism,
} from './scram/credentials.ts';
export { ScramMethod, NO_SCRAM_CREDENTIALS, type ScramLookup, type ScramLookupRequest, type ScramLookupResult, type ScramResultCounters, type MockSalts } from './scram/server.ts';
