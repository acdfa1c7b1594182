// helm and the offline manifest validator (deploy/helm/validate), for the chart's test: installed
// or built by scripts/ensure-helm.sh (the `helm` need of helpers/tiers.ts), run as child
// processes on files in a temporary directory. Nothing here talks to a Kubernetes cluster.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const CHART = path.join(ROOT, 'deploy/helm/spindle');

export interface HelmTools {
  helm: string;
  validate: string;
}

let tools: HelmTools | null = null;

/** The paths of helm and spindle-k8s-validate, from ensure-helm.sh's last lines (quick when both
 * are there). */
export function helmTools(): HelmTools {
  if (tools) return tools;
  const out = execFileSync(path.join(ROOT, 'scripts/ensure-helm.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const line = (name: string) => {
    const m = new RegExp(`^${name}=(.+)$`, 'm').exec(out);
    if (!m) throw new Error(`ensure-helm.sh printed no ${name}= line: ${out}`);
    return m[1];
  };
  tools = { helm: line('helm'), validate: line('validate') };
  return tools;
}

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], input?: string): Run {
  const r = spawnSync(command, args, { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

const scratch = mkdtempSync(path.join(tmpdir(), 'spindle-helm-'));
let files = 0;

/** A values file holding `values` (YAML is a superset of JSON), for -f. */
function valuesFile(values: unknown): string {
  const file = path.join(scratch, `values-${++files}.yaml`);
  writeFileSync(file, JSON.stringify(values));
  return file;
}

/** `helm <args...> CHART -f <values>` (lint, template). */
export function helm(verb: 'lint' | 'template', values: unknown = {}, extra: string[] = []): Run {
  const args = verb === 'template' ? ['template', 'r', CHART] : ['lint', CHART];
  return run(helmTools().helm, [...args, '--namespace', 'mqtt', '-f', valuesFile(values), ...extra]);
}

/** spindle-k8s-validate on a multi-document YAML text. */
export function validateManifests(yaml: string): Run {
  return run(helmTools().validate, [], yaml);
}
