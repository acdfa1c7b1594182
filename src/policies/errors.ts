// Owns the errors of the policy manager the admin API turns into 404 and 409.
export type PolicyErrorCode = 'POLICY_NOT_FOUND' | 'POLICY_NAME_CONFLICT';

export class PolicyError extends Error {
  constructor(
    readonly code: PolicyErrorCode,
    message: string,
    readonly field: string,
  ) {
    super(message);
    this.name = 'PolicyError';
  }
}
