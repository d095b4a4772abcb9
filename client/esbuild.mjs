// Bundles the extension (and the in-editor e2e suite) into single CommonJS files.
// `vscode` stays external: the editor provides it at run time.
import * as esbuild from 'esbuild';

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

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
