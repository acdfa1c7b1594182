// Owns reading a superuser flag that an external system wrote (an HTTP answer's is_superuser, a
// JWT claim, a database column), in the spellings EMQX accepts: true/false, "true"/"false", 1/0,
// "1"/"0"; absent, null and "" mean false. Anything else is not a flag (undefined): the caller
// decides whether that is a failure (an HTTP answer) or simply not a superuser (a token claim).
export function superuserOf(v: unknown): boolean | undefined {
  if (v === true || v === 1 || v === 'true' || v === '1') return true;
  if (v === undefined || v === null || v === false || v === 0 || v === 'false' || v === '0' || v === '') return false;
  return undefined;
}
