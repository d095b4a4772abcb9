// Grammar tokens on real IR printed by torch-mlir (fixtures/generate.py), tokenized by
// vscode-textmate with Oniguruma exactly as VS Code does.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { REPO, scopesOf, tokenize, type Token } from './grammarHarness';

function fixture(name: string): string {
  return fs.readFileSync(path.join(REPO, 'tests', 'client', 'fixtures', name), 'utf8');
}

/** Tokens of the first line containing `needle`. */
function lineWith(lines: Token[][], needle: string): Token[] {
  const found = lines.find((l) => l.map((t) => t.text).join('').includes(needle));
  assert.ok(found, `no line contains ${needle}`);
  return found;
}

function scopeAt(tokens: Token[], text: string): string {
  const t = tokens.find((x) => x.text === text);
  assert.ok(t, `no token "${text}" in ${JSON.stringify(tokens.map((x) => x.text))}`);
  return t.scopes.join(' ');
}

describe('MLIR grammar on real Linalg IR', () => {
  let lines: Token[][];
  before(async () => (lines = await tokenize(fixture('mlp.linalg.mlir'))));

  it('scopes dialect and op names', () => {
    const l = lineWith(lines, 'linalg.matmul');
    assert.match(scopeAt(l, 'linalg'), /entity\.name\.namespace\.dialect\.mlir/);
    assert.match(scopeAt(l, 'matmul'), /entity\.name\.function\.op\.mlir/);
    for (const op of ['generic', 'fill', 'transpose', 'yield', 'addf', 'empty', 'constant', 'func', 'expand_shape']) {
      assert.ok(scopesOf(lines, op).includes('entity.name.function.op.mlir'), op);
    }
  });

  it('scopes SSA values, result numbers, block labels and symbols', () => {
    assert.ok(scopesOf(lines, 'arg0').every((s) => s === 'variable.other.ssa.mlir'));
    assert.ok(scopesOf(lines, 'transposed').includes('variable.other.ssa.mlir'));
    const multi = lineWith(lines, '%15#0');
    assert.match(scopeAt(multi, '0'), /constant\.numeric\.result-number\.mlir/);
    assert.ok(scopesOf(lines, '^bb0').every((s) => s === 'entity.name.label.block.mlir'));
    assert.deepEqual(scopesOf(lines, '@main'), ['entity.name.function.symbol.mlir']);
  });

  it('scopes shaped types with their dims and element type', () => {
    const l = lineWith(lines, 'func.func @main');
    assert.match(scopeAt(l, 'tensor'), /meta\.type\.shaped\.mlir storage\.type\.builtin\.mlir/);
    assert.match(scopeAt(l, '16'), /constant\.numeric\.dimension\.mlir/);
    assert.match(scopeAt(l, 'f32'), /meta\.type\.shaped\.mlir storage\.type\.primitive\.mlir/);
  });

  it('scopes affine maps and attribute aliases', () => {
    const def = lines[0];
    assert.match(scopeAt(def, '#map'), /entity\.name\.type\.attribute-alias\.mlir/);
    assert.match(scopeAt(def, 'affine_map'), /support\.type\.attribute\.affine\.mlir/);
    assert.match(scopeAt(def, 'd0'), /variable\.parameter\.dimension\.mlir/);
    assert.match(scopeAt(def, '->'), /keyword\.operator\.arrow\.mlir/);
    assert.ok(scopesOf(lines, '#map1').includes('variable.other.attribute-alias.mlir'));
  });

  it('scopes numbers: floats, hex and integers', () => {
    assert.ok(scopesOf(lines, '0.000000e+00').includes('constant.numeric.float.mlir'));
    assert.ok(scopesOf(lines, '0xFF800000').includes('constant.numeric.hex.mlir'));
    const l = lineWith(lines, 'linalg.index 1');
    assert.match(scopeAt(l, '1'), /constant\.numeric\.integer\.mlir/);
  });

  it('scopes dense_resource handles and the resource blob section', () => {
    const l = lineWith(lines, 'dense_resource<torch_tensor_4_torch.float32>');
    assert.match(scopeAt(l, 'dense_resource'), /support\.type\.attribute\.mlir/);
    assert.match(scopeAt(l, 'torch_tensor_4_torch.float32'), /entity\.name\.tag\.resource\.mlir/);
    const blob = lines.find((x) => x.some((t) => t.text.startsWith('"0x04')));
    assert.ok(blob);
    assert.ok(blob.every((t) => t.scopes.includes('meta.resources.mlir')));
  });

  it('leaves no op line with unscoped words', () => {
    // Every alphabetic token on op lines of the function body gets some scope.
    const body = lines.filter((l) => l.some((t) => t.scopes.includes('entity.name.function.op.mlir')));
    for (const l of body) {
      for (const t of l) {
        if (/[A-Za-z]/.test(t.text)) assert.ok(t.scopes.length > 1, `unscoped "${t.text}"`);
      }
    }
  });
});

describe('MLIR grammar on real Torch, TOSA and StableHLO IR', () => {
  it('Torch dialect: !torch types, aten ops, locations', async () => {
    const lines = await tokenize(fixture('mlp.torch.mlir'));
    const l = lineWith(lines, 'torch.aten.mm');
    assert.match(scopeAt(l, 'aten.mm'), /entity\.name\.function\.op\.mlir/);
    assert.match(scopeAt(l, '!torch.vtensor'), /storage\.type\.dialect\.mlir/);
    assert.match(scopeAt(l, 'loc'), /meta\.location\.mlir keyword\.other\.location\.mlir/);
    const def = lineWith(lines, '#loc4 = loc(callsite(');
    assert.match(scopeAt(def, 'callsite'), /keyword\.other\.location\.mlir/);
    assert.match(scopeAt(def, 'at'), /meta\.location\.mlir/);
    const file = lineWith(lines, '#loc1 = loc(');
    assert.match(scopeAt(file, 'linear.py'), /meta\.location\.mlir string\.quoted\.double\.mlir/);
    assert.ok(scopesOf(lines, 'float1.000000e00').includes('variable.other.ssa.mlir'));
    assert.ok(scopesOf(lines, 'int-1').includes('variable.other.ssa.mlir'));
  });

  it('TOSA: generic op form in quotes, dense hex strings, !tosa.shape', async () => {
    const lines = await tokenize(fixture('mlp.tosa.mlir'));
    const l = lineWith(lines, '"tosa.const"');
    assert.match(scopeAt(l, 'tosa'), /entity\.name\.namespace\.dialect\.mlir/);
    assert.match(scopeAt(l, 'const'), /entity\.name\.function\.op\.mlir/);
    assert.match(scopeAt(l, 'values'), /entity\.other\.attribute-name\.mlir/);
    assert.ok(scopesOf(lines, '!tosa.shape').includes('storage.type.dialect.mlir'));
    assert.ok(scopesOf(lines, 'matmul').includes('entity.name.function.op.mlir'));
    assert.ok(scopesOf(lines, '3.40282347E+38').includes('constant.numeric.float.mlir'));
  });

  it('StableHLO: ops, dims keywords, scalar tensors', async () => {
    const lines = await tokenize(fixture('mlp.stablehlo.mlir'));
    const l = lineWith(lines, 'stablehlo.dot_general');
    assert.match(scopeAt(l, 'dot_general'), /entity\.name\.function\.op\.mlir/);
    assert.match(scopeAt(l, 'contracting_dims'), /entity\.other\.attribute-name\.mlir|keyword\.other\.mlir/);
    const scalar = lineWith(lines, 'tensor<f32>');
    assert.match(scopeAt(scalar, 'f32'), /storage\.type\.primitive\.mlir/);
  });

  it('comments and strings', async () => {
    const lines = await tokenize('// a comment with %0 = linalg.fill\n%s = "foo\\22bar" : i32');
    assert.deepEqual(lines[0].map((t) => t.scopes.at(-1)), ['comment.line.double-slash.mlir']);
    assert.match(scopeAt(lines[1], '\\22'), /constant\.character\.escape\.mlir/);
    assert.match(scopeAt(lines[1], 'i32'), /storage\.type\.primitive\.mlir/);
  });

  it('memref with strided layout and dynamic dims', async () => {
    const lines = await tokenize('%m = memref.alloc(%d) : memref<?x4xf32, strided<[4, 1], offset: ?>>');
    const l = lines[0];
    assert.deepEqual(scopesOf(lines, 'memref'), ['entity.name.namespace.dialect.mlir', 'storage.type.builtin.mlir']);
    assert.match(scopeAt(l, '?'), /constant\.numeric\.dimension\.mlir/);
    assert.match(scopeAt(l, 'strided'), /support\.type\.attribute\.mlir/);
    assert.match(scopeAt(l, 'alloc'), /entity\.name\.function\.op\.mlir/);
  });
});
