import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineMap } from '../../client/src/lineMap';
import type { FrameTable, IrLineMapping } from '../../client/src/protocol';

const USER = 'file:///ws/wrapper.py';
const MODELING = 'file:///venv/site-packages/transformers/models/llama/modeling_llama.py';
const UTILS = 'file:///venv/site-packages/transformers/pytorch_utils.py';

// A wrapper's `self.lm(ids)` on wrapper.py:12 (1-based). IR lines 3-4 come from
// modeling_llama.py:254 (attention), line 5 from :300 (MLP) through pytorch_utils.py:119;
// line 6 is user code only (no library frame: not in `frames`).
const MAP: IrLineMapping[] = [
  { irLine: 3, uri: USER, line: 12, depth: 0 },
  { irLine: 4, uri: USER, line: 12, depth: 0 },
  { irLine: 5, uri: USER, line: 12, depth: 0 },
  { irLine: 6, uri: USER, line: 13, depth: 0 },
];
const FRAMES: FrameTable = {
  files: [MODELING, USER, UTILS],
  library: [0, 2],
  chains: [
    [0, 254, 0, 400, 1, 12],
    [2, 119, 0, 300, 0, 400, 1, 12],
  ],
  rows: [
    [3, 0],
    [4, 0],
    [5, 1],
  ],
};

describe('LineMap with library frames', () => {
  const map = new LineMap(MAP, 0, FRAMES);

  it('gives Ctrl/Cmd-click the innermost frame first, in the library file', () => {
    const chain = map.chainFor(2);
    assert.deepEqual(chain[0], { uri: MODELING, line: 253, library: true });
    assert.deepEqual(chain[chain.length - 1], { uri: USER, line: 11, library: false });
    assert.deepEqual(map.chainFor(4).map((f) => f.uri), [UTILS, MODELING, MODELING, USER]);
  });

  it('sends Ctrl/Cmd-click on a library-made op to that one library line', () => {
    assert.deepEqual(map.definitionTargets(2), [{ uri: MODELING, line: 253, library: true }]);
    assert.deepEqual(map.definitionTargets(4), [{ uri: UTILS, line: 118, library: true }]);
    assert.deepEqual(map.definitionTargets(5), [{ uri: USER, line: 12, library: false }]);
  });

  it('falls back to the user frames for ops made in user code', () => {
    assert.deepEqual(map.chainFor(5), [{ uri: USER, line: 12, library: false }]);
    assert.deepEqual(map.chainFor(40), []);
  });

  it('links library lines to the IR lines they produced (source → IR highlight)', () => {
    assert.deepEqual(map.irLinesFor(MODELING, 253), [2, 3]);
    assert.deepEqual(map.irLinesFor(MODELING, 299), [4]);
    assert.deepEqual(map.irLinesFor(MODELING, 399), [2, 3, 4]); // the decoder layer's call line
    assert.deepEqual(map.irLinesFor(UTILS, 118), [4]);
    assert.ok(map.hasLibraryFile(MODELING) && map.hasLibraryFile(UTILS));
    assert.ok(!map.hasLibraryFile(USER));
  });

  it('keeps the user map as it was: library frames are not user frames', () => {
    assert.deepEqual(map.irLinesFor(USER, 11), [2, 3, 4]);
    assert.deepEqual(map.sourcesFor(2), [{ uri: USER, line: 11, depth: 0 }]);
    assert.deepEqual(map.mappedSourceLines(USER), [11, 12]);
  });

  it('shifts library links by the lines shown above the IR', () => {
    const shifted = new LineMap(MAP, 2, FRAMES);
    assert.deepEqual(shifted.irLinesFor(MODELING, 253), [4, 5]);
    assert.equal(shifted.chainFor(4)[0].uri, MODELING);
  });

  it('ignores rows that point at no chain', () => {
    const bad = new LineMap([], 0, { files: [MODELING], library: [0], chains: [[0, 5]], rows: [[1, 7], [0, 0]] });
    assert.deepEqual(bad.chainFor(0), []);
    assert.deepEqual(bad.irLinesFor(MODELING, 4), []);
  });
});
