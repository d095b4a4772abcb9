// The settings the server reads (contracts.md), as a plain object for initializationOptions.
// `python` and `colorBands` are client-only.

import * as vscode from 'vscode';

export const SECTION = 'torchMlirLens';

const SERVER_KEYS = [
  'defaultTarget',
  'lensTargets',
  'diagnostics',
  'diagnosticTargets',
  'timeoutSeconds',
  'memoryLimitMb',
  'exampleInputs',
  'pipelines',
  'strictExport',
  'cacheSizeMb',
  'rewrites',
  'stitchBlocks',
  'ireeArchs',
] as const;

export function serverSettings(resource?: vscode.Uri): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SECTION, resource ?? null); // null: no folder
  const out: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) out[key] = config.get(key);
  return out;
}

export function setting<T>(key: string, fallback: T, resource?: vscode.Uri): T {
  return vscode.workspace.getConfiguration(SECTION, resource ?? null).get<T>(key, fallback);
}
