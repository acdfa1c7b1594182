// Compiles a script without running it (POST /script/check, and every add or update): V8's own
// parser, so what passes here also compiles in the pool. A syntax error is answered with its
// 1-based line and column, read from V8's report (the line it names and the caret under the
// offending token).
import vm from 'node:vm';

export const SCRIPT_FILENAME = 'script.js';

export type CheckResult = { valid: true } | { valid: false; message: string; line: number; column: number };

export function checkScript(content: string): CheckResult {
  try {
    new vm.Script(content, { filename: SCRIPT_FILENAME });
    return { valid: true };
  } catch (err) {
    if (!(err instanceof SyntaxError)) return { valid: false, message: String(err), line: 1, column: 1 };
    return { valid: false, message: err.message, ...position(err.stack ?? '') };
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
