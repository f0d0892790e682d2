import { defineConfig } from 'vite';

// The build is embedded by the Go server (package ui) and served at /ui/
// under a CSP without inline scripts: no module-preload polyfill (it is
// inlined code), every asset a file of its own with a content hash.
export default defineConfig({
  base: '/ui/',
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
});
