// Shared by the in-editor suites: waiting on conditions, reading hovers, recording steps.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { TestApi } from '../../../client/src/testHooks';

export const EXTENSION_ID = 'torch-mlir-lens.torch-mlir-lens';

/** The driver's scratch folder (results, hand-shake files); set in code-server's environment. */
export function baseDir(): string {
  const base = process.env.TML_E2E_BASE;
  if (!base) throw new Error('TML_E2E_BASE is not set');
  return base;
}

/**
 * Polls `probe` until it returns a value. `seen`, when given, describes the state the last probe
 * saw, so a time-out says what the user would have seen instead of only what was awaited.
 */
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, seen?: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      lastError = String(e);
    }
    await new Promise((r) => setTimeout(r, 300)); // polling interval of a condition, not a fixed wait
  }
  const state = seen ? ` (last seen: ${seen()})` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${state}${lastError ? ` (last error: ${lastError})` : ''}`);
}

export function hoverText(hovers: vscode.Hover[]): string {
  return hovers
    .flatMap((h) => h.contents)
    .map((c) => (typeof c === 'string' ? c : c.value))
    .join('\n');
}

export function lineOf(doc: vscode.TextDocument, needle: string): number {
  for (let i = 0; i < doc.lineCount; i++) if (doc.lineAt(i).text.includes(needle)) return i;
  throw new Error(`${needle} not in ${doc.uri.fsPath}`);
}

export async function lensTitles(uri: vscode.Uri): Promise<string[]> {
  const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 50);
  return (lenses ?? []).map((l) => l.command?.title ?? '');
}

/** The installed extension, activated, with its test API (extension test mode). */
export async function extensionApi(): Promise<TestApi> {
  const ext = vscode.extensions.getExtension<TestApi | undefined>(EXTENSION_ID);
  if (!ext) throw new Error(`${EXTENSION_ID} is not installed`);
  const api = await ext.activate();
  if (!api) throw new Error('the extension returned no test API (not in extension test mode?)');
  return api;
}

export interface Step {
  ok: boolean;
  ms: number;
  detail: string;
}

/** Records named checks into `<base>/suite-result-<name>.json` as they finish. */
export class Steps {
  readonly steps: Record<string, Step> = {};
  constructor(private readonly name: string) {}

  async run(stepName: string, fn: () => Promise<string>): Promise<boolean> {
    const t0 = Date.now();
    try {
      this.steps[stepName] = { ok: true, detail: await fn(), ms: Date.now() - t0 };
    } catch (e) {
      this.steps[stepName] = { ok: false, detail: String(e), ms: Date.now() - t0 };
    }
    fs.writeFileSync(path.join(baseDir(), `suite-result-${this.name}.json`), JSON.stringify(this.steps, null, 2));
    return this.steps[stepName].ok;
  }

  /** Throws (failing the suite run) when a step failed. */
  check(): void {
    const failed = Object.entries(this.steps).filter(([, s]) => !s.ok);
    if (failed.length) throw new Error(`failed: ${failed.map(([n, s]) => `${n}: ${s.detail}`).join('; ')}`);
  }
}

/** Keeps the extension host up while the driver drives the UI; it writes `<base>/<file>`. */
export async function untilDriverDone(file: string): Promise<void> {
  await waitFor(`the driver to finish its UI steps (${file})`, 300_000, async () =>
    fs.existsSync(path.join(baseDir(), file)) ? true : undefined,
  );
}
