// Refusals of the alert engine's validation, each naming the request field at fault, for the
// routes to answer as a 400 (main thread).

export class AlertRuleError extends Error {
  readonly status = 400 as const;

  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'AlertRuleError';
  }
}
