// Compiles a script without running it (POST /script/check, and every add or update): V8's own
// parser, so what passes here also compiles in the pool. A syntax error is answered with its
// 1-based line and column, read from V8's report (the line it names and the caret under the
// offending token). A script that compiles but declares no convert at its top level is invalid
// too: the pool would fail every message with "defines no function convert" (script-runner.ts).
import vm from 'node:vm';

export const SCRIPT_FILENAME = 'script.js';

export const NO_CONVERT = 'the script defines no function convert(topic, payload)';

export type CheckResult =
  | { valid: true }
  /** A syntax error, where it is. */
  | { valid: false; message: string; line: number; column: number }
  /** Compiles, but cannot run: no line to point at. */
  | { valid: false; message: string };

export function checkScript(content: string): CheckResult {
  try {
    new vm.Script(content, { filename: SCRIPT_FILENAME });
  } catch (err) {
    if (!(err instanceof SyntaxError)) return { valid: false, message: String(err), line: 1, column: 1 };
    return { valid: false, message: err.message, ...position(err.stack ?? '') };
  }
  return declaresConvert(content) ? { valid: true } : { valid: false, message: NO_CONVERT };
}

/**
 * Whether the script declares `convert` at its top level (function, var, let or const), found by
 * the parser without running anything: a script that declares it cannot be compiled with one more
 * `let convert` after it ("has already been declared"). A function made only at run time (an
 * assignment to an undeclared name) is not seen, and is refused.
 */
function declaresConvert(content: string): boolean {
  try {
    new vm.Script(`${content}\n;let convert;`, { filename: SCRIPT_FILENAME });
    return false;
  } catch (err) {
    return err instanceof SyntaxError && /\bconvert\b.*already been declared/.test(err.message);
  }
}

/** `script.js:LINE`, the source line, then carets under the token: its position. */
function position(stack: string): { line: number; column: number } {
  const lines = stack.split('\n');
  const at = /^script\.js:(\d+)$/.exec(lines[0] ?? '');
  const line = at ? Number(at[1]) : 1;
  const caret = (lines[2] ?? '').indexOf('^');
  return { line, column: caret >= 0 ? caret + 1 : 1 };
}
