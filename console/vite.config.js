// The web console's build: one page, its script and styles bundled and minified into
// dist/console (served by the admin server at /), with hashed names under /assets/.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  logLevel: 'info',
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    assetsDir: 'assets',
    reportCompressedSize: true,
  },
});
