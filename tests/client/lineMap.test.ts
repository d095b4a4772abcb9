import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineMap, bandRanges, revealTarget, toRanges } from '../../client/src/lineMap';
import type { IrLineMapping } from '../../client/src/protocol';

const SRC = 'file:///ws/mlp.py';
const OTHER = 'file:///ws/blocks.py';

// Server map (1-based): IR lines 3-4 come from mlp.py:10 (fc1), 5 from :11 (relu);
// IR line 6 is an op inside a submodule in blocks.py:4, called from mlp.py:12.
const MAP: IrLineMapping[] = [
  { irLine: 3, uri: SRC, line: 10, depth: 0 },
  { irLine: 4, uri: SRC, line: 10, depth: 0 },
  { irLine: 5, uri: SRC, line: 11, depth: 0 },
  { irLine: 6, uri: OTHER, line: 4, depth: 0 },
  { irLine: 6, uri: SRC, line: 12, depth: 1 },
  { irLine: 6, uri: SRC, line: 12, depth: 1 }, // duplicates are tolerated
];

describe('LineMap', () => {
  const map = new LineMap(MAP);

  it('converts the server 1-based lines to 0-based editor lines', () => {
    assert.deepEqual(map.irLinesFor(SRC, 9), [2, 3]);
    assert.deepEqual(map.irLinesFor(SRC, 10), [4]);
  });

  it('gives a calling line the ops of the submodule it calls', () => {
    assert.deepEqual(map.irLinesFor(SRC, 11), [5]);
    assert.deepEqual(map.irLinesFor(OTHER, 3), [5]);
  });

  it('lists the sources of an IR line innermost first, without duplicates', () => {
    assert.deepEqual(map.sourcesFor(5), [
      { uri: OTHER, line: 3, depth: 0 },
      { uri: SRC, line: 11, depth: 1 },
    ]);
    assert.deepEqual(map.sourceLinesIn(SRC, 5), [11]);
    assert.deepEqual(map.sourcesFor(0), []);
  });

  it('unmapped lines and empty maps answer empty', () => {
    assert.deepEqual(map.irLinesFor(SRC, 0), []);
    assert.deepEqual(map.irLinesFor('file:///nope.py', 9), []);
    assert.ok(new LineMap([]).isEmpty);
    assert.ok(!map.isEmpty);
  });

  it('shifts IR lines by the header shown above the IR', () => {
    const shifted = new LineMap(MAP, 3);
    assert.deepEqual(shifted.irLinesFor(SRC, 9), [5, 6]);
    assert.deepEqual(shifted.sourceLinesIn(SRC, 7), [10]);
  });

  it('ignores entries with lines below 1', () => {
    const m = new LineMap([{ irLine: 0, uri: SRC, line: 3, depth: 0 }, { irLine: 2, uri: SRC, line: 0, depth: 0 }]);
    assert.ok(m.isEmpty);
  });

  it('colours each mapped source line and its IR lines alike (innermost frame in that file)', () => {
    const { source, ir } = map.bands(SRC, 6);
    assert.deepEqual([...source.entries()], [[9, 3], [10, 4], [11, 5]]);
    assert.equal(ir.get(2), 3);
    assert.equal(ir.get(3), 3);
    assert.equal(ir.get(4), 4);
    assert.equal(ir.get(5), 5);
    // In blocks.py the submodule's op takes the colour of its own (innermost) line.
    assert.equal(map.bands(OTHER, 6).ir.get(5), 3);
  });

  it('gives a source line the same colour in every pane of the file', () => {
    const linalg = new LineMap(MAP);
    const tosa = new LineMap([{ irLine: 40, uri: SRC, line: 11, depth: 0 }]);
    assert.equal(linalg.bands(SRC, 6).source.get(10), tosa.bands(SRC, 6).source.get(10));
    assert.equal(tosa.bands(SRC, 6).ir.get(39), linalg.bands(SRC, 6).source.get(10));
  });
});

describe('decoration ranges', () => {
  it('merges consecutive lines into ranges', () => {
    assert.deepEqual(toRanges([7, 3, 4, 5, 9, 4]), [
      { start: 3, end: 5 },
      { start: 7, end: 7 },
      { start: 9, end: 9 },
    ]);
    assert.deepEqual(toRanges([]), []);
  });

  it('groups band colours into ranges per colour', () => {
    const colourOf = new Map([[1, 0], [2, 0], [3, 1], [5, 0]]);
    assert.deepEqual(bandRanges(colourOf, 2), [
      [{ start: 1, end: 2 }, { start: 5, end: 5 }],
      [{ start: 3, end: 3 }],
    ]);
  });

  it('reveals the first highlighted IR line', () => {
    assert.equal(revealTarget([8, 3, 5]), 3);
    assert.equal(revealTarget([]), undefined);
  });
});
