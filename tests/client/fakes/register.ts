// Preloaded by the unit test run (`node --require`, package.json `test:unit`): `require('vscode')`
// loads the fake in ./vscode.ts, so client modules that talk to the editor load outside one.
// The extension's bundle never sees this: esbuild leaves `vscode` to the editor.

import Module from 'node:module';

const FAKE = require.resolve('./vscode');

/** Node's (internal, stable for years) hook that maps a request to a file. */
interface Resolver {
  _resolveFilename(request: string, ...rest: unknown[]): string;
}

const resolver = Module as unknown as Resolver;
const resolve = resolver._resolveFilename;
resolver._resolveFilename = function (request: string, ...rest: unknown[]): string {
  return request === 'vscode' ? FAKE : resolve.call(this, request, ...rest);
};
