// The configuration file of the Debian package (scripts/default-config.ts, installed as
// /etc/spindle/spindle.yaml): as shipped it loads to the defaults plus the package's own
// settings; with every setting uncommented it is still valid YAML and loads to the defaults, so
// each `#key: value` line shows a key's true default and sits in the right section; and every
// key of the configuration is in it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { configKeys, getPath, loadConfig } from '../../src/config/index.ts';
import { PACKAGE_SETTINGS, defaultConfigYaml } from '../../scripts/default-config.ts';

const machine = { cpus: 2, hostname: 'host' };

function load(text: string) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spindle-default-config-'));
  try {
    const file = path.join(dir, 'spindle.yaml');
    writeFileSync(file, text);
    return loadConfig({ argv: ['--config', file], env: {}, ...machine });
  } finally {
    rmSync(dir, { recursive: true });
  }
}

/** Every setting line live: the `#` right before a key (not `# ` prose) deleted. */
function uncommentAll(text: string): string {
  return text.replace(/^(\s*)#(?=[A-Za-z])/gm, '$1');
}

const defaults = loadConfig({ argv: [], env: {}, ...machine }) as unknown as Record<string, unknown>;

test("the packaged file loads to the defaults and the package's settings", () => {
  const config = load(defaultConfigYaml(PACKAGE_SETTINGS)) as unknown as Record<string, unknown>;
  for (const { key } of configKeys()) {
    const expected = Object.hasOwn(PACKAGE_SETTINGS, key) ? PACKAGE_SETTINGS[key] : getPath(defaults, key);
    assert.deepEqual(getPath(config, key), expected, key);
  }
});

test('with every setting uncommented it loads to the defaults', () => {
  const text = uncommentAll(defaultConfigYaml());
  assert.match(text, /^ {4}port: 1883$/m, 'mqtt.tcp.port is live');
  const config = load(text) as unknown as Record<string, unknown>;
  assert.deepEqual(config, defaults);
});

test('every key is in the file, with its environment variable', () => {
  const text = defaultConfigYaml();
  const missing = configKeys().filter((k) => !text.includes(`(${k.env})`) || !new RegExp(`^\\s*#(${k.key.split('.').at(-1)}: |\\s*Default: )`, 'm').test(text));
  assert.deepEqual(missing.map((k) => k.key), []);
});
