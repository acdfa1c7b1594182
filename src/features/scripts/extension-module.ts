// Where an extension's module is: `className` is "<path inside extensions.dir>#<ExportName>"
// (no "#": the default export). The path must resolve, symbolic links followed, to a file inside
// the directory. Whether the module really exports a class is checked in a short-lived thread of
// its own (importing it runs its top level: never in the main thread).
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

import { ProcessorError } from './errors.ts';

const MODULE_SUFFIX = /\.(mjs|cjs|js)$/;
const EXPORT_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const CHECK_TIMEOUT_MS = 10_000;

export interface ExtensionModule {
  /** Absolute, real path of the module. */
  file: string;
  exportName: string;
}

export function resolveExtension(dir: string, className: string): ExtensionModule {
  const field = 'config.className';
  if (dir === '') throw new ProcessorError(400, field, 'extensions are off: set extensions.dir in the configuration to the directory they are loaded from');
  const hash = className.lastIndexOf('#');
  const modulePart = hash < 0 ? className : className.slice(0, hash);
  const exportName = hash < 0 ? 'default' : className.slice(hash + 1);
  if (!EXPORT_NAME.test(exportName)) throw new ProcessorError(400, field, `${exportName}: not an export name`);
  if (!MODULE_SUFFIX.test(modulePart)) throw new ProcessorError(400, field, `${modulePart}: expected a .mjs, .cjs or .js module`);
  let root: string;
  try {
    root = realpathSync(dir);
  } catch {
    throw new ProcessorError(400, field, `extensions.dir ${dir} does not exist`);
  }
  let file: string;
  try {
    file = realpathSync(path.resolve(root, modulePart));
  } catch {
    throw new ProcessorError(400, field, `${modulePart}: no such module in ${root}`);
  }
  if (!file.startsWith(root + path.sep)) throw new ProcessorError(400, field, `${modulePart}: outside extensions.dir`);
  if (!statSync(file).isFile()) throw new ProcessorError(400, field, `${modulePart}: not a file`);
  return { file, exportName };
}

/** Imports the module in a thread of its own and checks that `exportName` is a class with an
 * onMessage method. */
export function checkExtension(m: ExtensionModule): Promise<void> {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.url).then((mod) => {
      const c = mod[workerData.exportName];
      if (typeof c !== 'function') return parentPort.postMessage('the module exports no class ' + workerData.exportName);
      if (typeof c.prototype?.onMessage !== 'function') return parentPort.postMessage(workerData.exportName + ' has no onMessage(message) method');
      parentPort.postMessage('');
    }, (err) => parentPort.postMessage('the module does not load: ' + (err && err.message || err)));
  `;
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { url: pathToFileURL(m.file).href, exportName: m.exportName }, resourceLimits: { maxOldGenerationSizeMb: 256 } });
    const timer = setTimeout(() => {
      void w.terminate();
      reject(new ProcessorError(400, 'config.className', `loading the module took longer than ${CHECK_TIMEOUT_MS} ms`));
    }, CHECK_TIMEOUT_MS);
    w.once('message', (problem: string) => {
      clearTimeout(timer);
      void w.terminate();
      if (problem === '') resolve();
      else reject(new ProcessorError(400, 'config.className', problem));
    });
    w.once('error', (err) => {
      clearTimeout(timer);
      reject(new ProcessorError(400, 'config.className', `the module does not load: ${err.message}`));
    });
  });
}
