// Bundles the extension (and the in-editor e2e suite) into single CommonJS files.
// `vscode` stays external: the editor provides it at run time.
import * as esbuild from 'esbuild';
import * as fs from 'node:fs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: ['vscode'],
  sourcemap: !production,
  minify: production,
  logLevel: 'info',
};

const builds = [
  { ...common, entryPoints: ['client/src/extension.ts'], outfile: 'dist/extension.js' },
  // Runs inside the real extension host during the e2e test (extensionTestsPath).
  { ...common, entryPoints: ['tests/e2e/suite/index.ts'], outfile: 'out/e2e/suite/index.js' },
];

// The graph view's page script (client/graphPage/), with its layout library (dagre) inside and
// that library's licence at its head: the editor's webview loads it from dist/, and the
// Python package ships it for the self-contained pages `torch-mlir-lens graph` writes.
const licences = ['@dagrejs/dagre', '@dagrejs/graphlib'].map((name) =>
  `${name} (bundled):\n${fs.readFileSync(`node_modules/${name}/LICENSE`, 'utf8').trim()}`);
const page = {
  bundle: true,
  platform: 'browser',
  target: 'chrome110',
  format: 'iife',
  minify: true,
  legalComments: 'none',
  banner: { js: `/*!\n${licences.join('\n\n').replaceAll('*/', '* /')}\n*/` },
  logLevel: 'info',
  entryPoints: ['client/graphPage/main.ts'],
};
builds.push({ ...page, outfile: 'dist/graphPage.js' },
  { ...page, outfile: 'server/torch_mlir_lens/views/assets/graph_page.js' });
// The ONNX model view's page script (client/onnxPage/): the custom editor's webview loads it.
builds.push({ ...page, banner: undefined, entryPoints: ['client/onnxPage/main.ts'], outfile: 'dist/onnxPage.js' });

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
