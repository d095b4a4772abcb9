// Loads syntaxes/mlir.tmLanguage.json into vscode-textmate with the real Oniguruma WASM,
// as VS Code does, so tests see the same tokens an editor would.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as oniguruma from 'vscode-oniguruma';
import * as vsctm from 'vscode-textmate';

export const REPO = path.resolve(__dirname, '..', '..', '..');
const GRAMMAR = path.join(REPO, 'syntaxes', 'mlir.tmLanguage.json');
const SCOPE = 'source.mlir.torch-mlir-lens';

export interface Token {
  text: string;
  scopes: string[];
}

let grammarPromise: Promise<vsctm.IGrammar> | undefined;

export function loadGrammar(): Promise<vsctm.IGrammar> {
  grammarPromise ??= (async () => {
    const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
    await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
    const registry = new vsctm.Registry({
      onigLib: Promise.resolve({
        createOnigScanner: (sources: string[]) => new oniguruma.OnigScanner(sources),
        createOnigString: (s: string) => new oniguruma.OnigString(s),
      }),
      loadGrammar: async (scopeName: string) =>
        scopeName === SCOPE
          ? vsctm.parseRawGrammar(fs.readFileSync(GRAMMAR, 'utf8'), GRAMMAR)
          : null,
    });
    const grammar = await registry.loadGrammar(SCOPE);
    if (!grammar) throw new Error('grammar did not load');
    return grammar;
  })();
  return grammarPromise;
}

/** Tokenizes a whole document; one Token list per line. */
export async function tokenize(text: string): Promise<Token[][]> {
  const grammar = await loadGrammar();
  let state = vsctm.INITIAL;
  const out: Token[][] = [];
  for (const line of text.split('\n')) {
    const r = grammar.tokenizeLine(line, state);
    out.push(r.tokens.map((t) => ({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes })));
    state = r.ruleStack;
  }
  return out;
}

/** The innermost scopes of every token whose text is exactly `text`. */
export function scopesOf(lines: Token[][], text: string): string[] {
  return lines.flat().filter((t) => t.text === text).map((t) => t.scopes[t.scopes.length - 1]);
}
