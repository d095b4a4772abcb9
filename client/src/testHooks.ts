// What the end-to-end tests read to check what the user sees, without depending on VS Code's
// internal CSS: the decorations the extension drew per editor, the hover VS Code would show at
// the cursor, the servers (with how many times each started) and the panes, the status bar, the
// heat bands of a profile and the ONNX model views.
// Never active in normal use:
// - in extension test mode, `activate` returns `TestApi` (the in-editor suite uses it);
// - with TORCH_MLIR_LENS_TEST_REPORT=<file> in the environment, the command
//   `torchMlirLens.test.report` writes `TestReport` as JSON to that file (UI tests bind a key).

import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { IrPanes } from './irPanes';
import type { FolderServer } from './folderServer';
import type { HeatBands } from './heatBands';
import type { LensClient } from './languageClient';
import type { Linking } from './linking';
import type { OnnxEditors } from './onnxEditor';
import type { StatusBar } from './statusBar';
import type { Trust } from './trust';

export const REPORT_ENV = 'TORCH_MLIR_LENS_TEST_REPORT';

interface LineSpan {
  start: number; // 0-based, inclusive
  end: number;
}

export interface TestReport {
  seq: number;
  /** The active editor and its cursor (0-based). */
  active?: { uri: string; line: number; character: number };
  /** Markdown of every hover VS Code would show at the active cursor (all providers). */
  hover: string;
  editors: {
    uri: string;
    visible: LineSpan[];
    decorations: Record<string, LineSpan[]>;
    /** The text of the first decorated lines of each kind. */
    decoratedText: Record<string, string[]>;
  }[];
  servers: {
    key: string;
    folder: string | null;
    state: string;
    detail?: string;
    interpreter?: string;
    source?: string;
    running: boolean;
    /** Starts (and restarts) of this server since it was created: a restart adds one. */
    starts: number;
  }[];
  /** The status bar item as shown: its text and its tooltip (which names the interpreter). */
  status: { text: string; tooltip: string };
  panes: { uri: string; source: string; module: string; target: string; loading: boolean; text: string }[];
  /** The heat bands of a profile drawn in each file (0-based lines, their share). */
  heat: Record<string, { line: number; share: number }[]>;
  /** The open ONNX model views: their nodes' verdicts as sent to the page, the nodes lit. */
  onnx: { uri: string; graph: string; error?: string; nodes: { index: number; opType: string; states: Record<string, string> }[]; lit: number[] }[];
}

export interface TestApi {
  client: LensClient;
  trust: Trust;
  report(): Promise<TestReport>;
}

interface Parts {
  client: LensClient;
  trust: Trust;
  panes: IrPanes;
  linking: Linking;
  status: StatusBar;
  heat: HeatBands;
  onnx: OnnxEditors;
}

let seq = 0;
const starts = new WeakMap<FolderServer, number>();

/** Counts each server's starts (every start resolves its interpreter first). */
function countStarts(client: LensClient): vscode.Disposable {
  const watched = new WeakSet<FolderServer>();
  const watch = () => {
    for (const s of client.all()) {
      if (watched.has(s)) continue;
      watched.add(s);
      s.onPhase((p) => {
        if (p === 'interpreter') starts.set(s, (starts.get(s) ?? 0) + 1);
      });
    }
  };
  watch();
  return client.onDidChangeServers(watch);
}

async function report({ client, panes, linking, status, heat, onnx }: Parts): Promise<TestReport> {
  const active = vscode.window.activeTextEditor;
  let hover = '';
  if (active) {
    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', active.document.uri, active.selection.active);
    hover = (hovers ?? [])
      .flatMap((h) => h.contents)
      .map((c) => (typeof c === 'string' ? c : c.value))
      .join('\n---\n');
  }
  const span = (r: vscode.Range): LineSpan => ({ start: r.start.line, end: r.end.line });
  return {
    seq: ++seq,
    active: active && { uri: active.document.uri.toString(), line: active.selection.active.line, character: active.selection.active.character },
    hover,
    editors: vscode.window.visibleTextEditors.map((ed) => {
      const drawn = linking.decorationsOf(ed.document.uri);
      const decoratedText: Record<string, string[]> = {};
      for (const [kind, ranges] of Object.entries(drawn)) {
        const lines = ranges.flatMap((r) => Array.from({ length: r.end.line - r.start.line + 1 }, (_, i) => r.start.line + i));
        decoratedText[kind] = lines.slice(0, 20).filter((l) => l < ed.document.lineCount).map((l) => ed.document.lineAt(l).text);
      }
      return {
        uri: ed.document.uri.toString(),
        visible: ed.visibleRanges.map(span),
        decorations: Object.fromEntries(Object.entries(drawn).map(([k, v]) => [k, v.map(span)])),
        decoratedText,
      };
    }),
    servers: client.all().map((s) => ({
      key: s.key,
      folder: s.folder?.name ?? null,
      state: s.state,
      detail: s.detail,
      interpreter: s.interpreter?.path,
      source: s.interpreter?.source,
      running: s.running,
      starts: starts.get(s) ?? 0,
    })),
    status: status.shown(),
    panes: panes.all().map((p) => ({
      uri: p.uri.toString(),
      source: p.spec.source,
      module: p.spec.module,
      target: p.spec.target,
      loading: p.loading,
      text: p.text.slice(0, 4000),
    })),
    heat: Object.fromEntries(vscode.window.visibleTextEditors.map((ed) => [ed.document.uri.toString(), heat.bandsOf(ed.document.uri.toString())])),
    onnx: [...onnx.views].map((v) => ({
      uri: v.uri.toString(),
      graph: v.model?.graph ?? '',
      error: v.error,
      nodes: (v.model?.nodes ?? []).slice(0, 200).map((n) => ({ index: n.index, opType: n.opType, states: Object.fromEntries(n.verdicts.map((x) => [x.target, x.state])) })),
      lit: v.lit,
    })),
  };
}

/** Registers the test hooks that apply; returns the API for extension test mode, else undefined. */
export function testHooks(context: vscode.ExtensionContext, parts: Parts): TestApi | undefined {
  const file = process.env[REPORT_ENV];
  const testMode = context.extensionMode === vscode.ExtensionMode.Test;
  if (file || testMode) context.subscriptions.push(countStarts(parts.client));
  if (file) {
    context.subscriptions.push(
      vscode.commands.registerCommand('torchMlirLens.test.report', async () => {
        const r = await report(parts);
        fs.writeFileSync(`${file}.tmp`, JSON.stringify(r, null, 2));
        fs.renameSync(`${file}.tmp`, file); // readers never see half a report
      }),
    );
  }
  if (!testMode) return undefined;
  return { client: parts.client, trust: parts.trust, report: () => report(parts) };
}
