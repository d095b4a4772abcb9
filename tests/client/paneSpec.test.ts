import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromQuery, paneText, paneTitle, toUriParts, type PaneSpec } from '../../client/src/paneSpec';

const SPEC: PaneSpec = { source: 'file:///ws/my%20model.py', module: 'MLP', target: 'linalg' };

describe('pane URIs', () => {
  it('titles a pane like "MLP · linalg.mlir"', () => {
    assert.equal(paneTitle(SPEC), 'MLP · linalg.mlir');
    assert.equal(toUriParts(SPEC).path, '/MLP · linalg.mlir');
  });

  it('titles custom pipelines and passes, without slashes in the path', () => {
    const spec = { ...SPEC, target: 'custom', pipelineName: 'decompose', pipeline: 'builtin.module(a/b)', pass: 2, passName: 'func.func(canonicalize)' };
    assert.equal(paneTitle(spec), 'MLP · decompose · after func.func(canonicalize).mlir');
    assert.ok(!paneTitle({ ...SPEC, module: 'a/b' }).includes('/'));
  });

  it('titles a pane showing repeated blocks the other way than the setting', () => {
    assert.equal(paneTitle({ ...SPEC, blocks: 'inline' }), 'MLP · linalg · blocks inline.mlir');
    assert.equal(paneTitle({ ...SPEC, blocks: 'stitched' }), 'MLP · linalg · blocks once.mlir');
    assert.notEqual(toUriParts({ ...SPEC, blocks: 'inline' }).query, toUriParts(SPEC).query);
  });

  it('titles the ONNX path apart from torch.export, and round-trips it', () => {
    const via: PaneSpec = { ...SPEC, via: 'onnx' };
    assert.equal(paneTitle(via), 'MLP · linalg · via ONNX.mlir');
    assert.notEqual(toUriParts(via).query, toUriParts(SPEC).query);
    assert.deepEqual(fromQuery(toUriParts(via).query), via);
    assert.equal(fromQuery(toUriParts(SPEC).query + '&via=tflite')?.via, undefined);
  });

  it('round-trips through the query', () => {
    const spec = { ...SPEC, target: 'custom', pipelineName: 'p', pipeline: 'builtin.module(x)', pass: 0, passName: 'x' };
    assert.deepEqual(fromQuery(toUriParts(spec).query), spec);
    const inline: PaneSpec = { ...SPEC, blocks: 'inline' };
    assert.deepEqual(fromQuery(toUriParts(inline).query), inline);
    assert.equal(fromQuery(toUriParts(SPEC).query + '&blocks=other')?.blocks, undefined);
    assert.deepEqual(fromQuery(toUriParts(SPEC).query), SPEC);
    assert.equal(fromQuery('module=MLP'), undefined);
  });
});

describe('pane text', () => {
  it('shows IR as is when lowering worked', () => {
    assert.deepEqual(paneText(SPEC, { ok: true, ir: 'module {\n}', diagnostics: [] }), { text: 'module {\n}\n', irOffset: 0 });
  });

  it('puts failures as comments above partial IR and reports the offset', () => {
    const r = paneText(SPEC, {
      ok: false,
      ir: 'module {}\n',
      diagnostics: [{ severity: 'error', message: 'failed to legalize\nsecond line', line: 12, op: 'aten.roll' }],
    });
    const lines = r.text.split('\n');
    assert.equal(lines[0], '// Torch-MLIR Lens: lowering MLP to linalg failed.');
    assert.equal(lines[1], '// error [aten.roll] (line 12): failed to legalize');
    assert.equal(lines[2], '//   second line');
    assert.equal(lines[r.irOffset], 'module {}');
  });

  it('shows a partial lowering as the server wrote it (its header lists the rejected ops)', () => {
    const ir = '// Partial Linalg lowering: 1 line holds ops Linalg cannot lower,\nmodule {}\n';
    const r = paneText(SPEC, {
      ok: false, partial: true, ir,
      diagnostics: [{ severity: 'error', message: '`aten.erfinv` cannot be lowered to Linalg', line: 12, op: 'torch.aten.erfinv' }],
    });
    assert.deepEqual(r, { text: ir, irOffset: 0 });
  });
});
