// The table of every worker operation, by name (see types.ts).
import type { Op } from './types.ts';
import { systemOps } from './system.ts';

export const OPS: Readonly<Record<string, Op>> = {
  ...systemOps,
};
