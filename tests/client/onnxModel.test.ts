// The ONNX model view's data (client/onnxPage/model.ts): search, grouping, verdict words.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { group, isProblem, opsetText, search, summaryText, valueText, worst, type NodeRow } from '../../client/onnxPage/model';

function node(index: number, opType: string, states: string[], extra: Partial<NodeRow> = {}): NodeRow {
  const targets = ['linalg', 'tosa'];
  return {
    index,
    name: `n${index}`,
    opType,
    domain: '',
    opset: 17,
    inputs: ['f32[2,3]'],
    outputs: ['f32[2,3]'],
    verdicts: states.map((state, i) => ({ target: targets[i], state: state as NodeRow['verdicts'][0]['state'], why: state === 'ok' ? null : 'why' })),
    ...extra,
  };
}

const NODES = [
  node(1, 'Relu', ['ok', 'ok']),
  node(2, 'FastGelu', ['rejected', 'rejected'], { domain: 'com.microsoft', outputs: ['none'] }),
  node(3, 'Relu', ['knock-on', 'ok']),
  node(4, 'Conv', ['ok', 'ok']),
];

test('search by name, operator, type and #index', () => {
  assert.deepEqual(search(NODES, 'gelu').map((n) => n.index), [2]);
  assert.deepEqual(search(NODES, 'com.microsoft').map((n) => n.index), [2]);
  assert.deepEqual(search(NODES, 'NONE').map((n) => n.index), [2]);
  assert.deepEqual(search(NODES, '#3').map((n) => n.index), [3]);
  assert.equal(search(NODES, '  ').length, 4);
});

test('groups by operator put those with problems first', () => {
  const groups = group(NODES, 'op');
  assert.deepEqual(groups.map((g) => [g.key, g.nodes.length, g.problems]), [
    ['Relu', 2, 1],
    ['com.microsoft.FastGelu', 1, 1],
    ['Conv', 1, 0],
  ]);
  assert.deepEqual(group(NODES, 'verdict').map((g) => g.key), ['rejected', 'knock-on', 'ok']);
  assert.deepEqual(group(NODES, 'none')[0].nodes.map((n) => n.index), [1, 2, 3, 4]);
  assert.equal(worst(NODES[2]), 'knock-on');
  assert.equal(isProblem(NODES[0]), false);
});

test('summaries, values and opsets in words', () => {
  assert.equal(summaryText({ target: 'linalg', ok: true, partial: false, rejected: 0, message: null }), 'Linalg ✓');
  assert.equal(summaryText({ target: 'tosa', ok: false, partial: true, rejected: 2, message: null }), 'TOSA ✗ 2 nodes');
  assert.equal(summaryText({ target: 'stablehlo', ok: false, partial: false, rejected: 0, message: 'it failed' }), 'StableHLO ✗ (it failed)');
  assert.equal(valueText({ name: 'x', dtype: 'float', dims: ['batch', 4] }), 'float [batch, 4]');
  assert.equal(opsetText({ '': 17, 'com.microsoft': 1 }), 'ai.onnx 17 · com.microsoft 1');
});
