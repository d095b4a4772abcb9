import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { FANOUT, Layouter, type Box, type LayoutLibrary } from '../../client/graphPage/layout';
import { EXPAND_ALL_BUDGET, GraphIndex, type GraphGroup, type GraphNode, type ModuleGraph, initialExpansion, visible } from '../../client/graphPage/model';

function node(id: string, group: string | null): GraphNode {
  return { id, op: 'aten.add', name: id, group, file: '/m.py', line: 1, library_line: null, ir_lines: [], shape: [2], dtype: 'f32', targets: {} };
}

function group(id: string, parent: string | null): GraphGroup {
  return { id, name: id, kind: 'module', parent, path: id, class: 'M' };
}

function graph(nodes: GraphNode[], groups: GraphGroup[], edges: [string, string][]): GraphIndex {
  const g: ModuleGraph = {
    module: 'M', file: '/m.py', targets: ['linalg'], nodes, groups, verdicts: {}, ir: '', stats: {},
    edges: edges.map(([from, to]) => ({ from, to, type: 'f32[2]' })),
  };
  return new GraphIndex(g);
}

/** `inner` lies inside `outer`. */
function inside(inner: Box, outer: Box): boolean {
  return inner.x - inner.width / 2 >= outer.x - outer.width / 2 && inner.x + inner.width / 2 <= outer.x + outer.width / 2
    && inner.y - inner.height / 2 >= outer.y - outer.height / 2 && inner.y + inner.height / 2 <= outer.y + outer.height / 2;
}

// x → [a: a1 → a2] → [b: b1 → (b.c: c1)] → y
const NESTED = () => graph(
  [node('x', null), node('a1', 'a'), node('a2', 'a'), node('b1', 'b'), node('c1', 'c'), node('y', null)],
  [group('a', null), group('b', null), group('c', 'b')],
  [['x', 'a1'], ['a1', 'a2'], ['a2', 'b1'], ['b1', 'c1'], ['c1', 'y']],
);

describe('the graph layout, one group at a time', () => {
  let lib: LayoutLibrary;
  before(async () => {
    lib = (await import('@dagrejs/dagre')).default; // ESM: loaded as the page's bundle has it
  });
  const layout = (v: Parameters<Layouter['layout']>[0]) => new Layouter(lib).layout(v);

  it('draws a group as a frame around its members, an edge across groups to the frame', () => {
    const index = NESTED();
    const l = layout(visible(index, new Set(['a', 'b', 'c']), 'linalg'));
    const box = (id: string) => l.boxes.get(id) as Box;
    for (const [member, frame] of [['a1', 'a'], ['a2', 'a'], ['b1', 'b'], ['c', 'b'], ['c1', 'c']]) {
      assert.ok(inside(box(member), box(frame)), `${member} outside ${frame}`);
    }
    assert.ok(!inside(box('x'), box('a')) && !inside(box('y'), box('b')));
    const drawn = l.edges.map((e) => `${e.from}>${e.to}`).sort();
    // Inside a group between its members; across groups between the frames (or ops) holding them.
    assert.deepEqual(drawn, ['a1>a2', 'a>b', 'b1>c', 'b>y', 'x>a'].sort());
    assert.ok(l.edges.every((e) => e.points.length >= 2));
    // What enters a group from outside marks the member it reaches.
    const stubs = l.stubs.map((s) => `${s.from}>${s.to}`).sort();
    assert.deepEqual(stubs, ['a2>b1', 'b1>c1', 'x>a1'].sort());
    assert.ok(l.width > 0 && l.height > box('b').height);
  });

  it('lays out again only the groups an expansion changed', () => {
    const index = NESTED();
    const layouter = new Layouter(lib);
    const first = layouter.layout(visible(index, new Set(['a', 'b']), 'linalg'));
    assert.equal(first.laidOut, 3); // a, b and the top
    const again = layouter.layout(visible(index, new Set(['a', 'b']), 'linalg'));
    assert.equal(again.laidOut, 0);
    // Opening c lays out c, b (which holds it, now bigger) and the top; a's own is kept.
    const opened = layouter.layout(visible(index, new Set(['a', 'b', 'c']), 'linalg'));
    assert.equal(opened.laidOut, 3);
    const within = (l: typeof again) => (l.boxes.get('a1') as Box).y - (l.boxes.get('a') as Box).y;
    assert.equal(within(opened), within(again));
  });

  it('gives the users of a value many members read stubs, not edges', () => {
    const users = Array.from({ length: FANOUT + 2 }, (_, i) => `u${i}`);
    const chain: [string, string][] = users.slice(1).map((u, i) => [users[i], u]);
    const index = graph([node('table', null), ...users.map((u) => node(u, null))], [],
      [...chain, ...users.map((u): [string, string] => ['table', u])]);
    const l = layout(visible(index, new Set(), 'linalg'));
    assert.ok(l.edges.every((e) => e.from !== 'table'));
    assert.deepEqual(l.stubs.filter((s) => s.from === 'table').map((s) => s.to).sort(), [...users].sort());
    // The users stack as their own chain, one rank each.
    const ys = users.map((u) => (l.boxes.get(u) as Box).y);
    assert.ok(ys.every((y, i) => i === 0 || y > ys[i - 1]));
  });

  it('"Expand all" stops opening groups at its budget', () => {
    const groups = Array.from({ length: 40 }, (_, i) => group(`g${i}`, null));
    const nodes = groups.flatMap((g) => Array.from({ length: 60 }, (_, k) => node(`${g.id}n${k}`, g.id)));
    const index = graph(nodes, groups, []);
    const opened = initialExpansion(index, EXPAND_ALL_BUDGET, true);
    const drawn = visible(index, opened, 'linalg').items.length;
    assert.ok(opened.size > 0 && opened.size < groups.length, `${opened.size} groups opened`);
    assert.ok(drawn <= EXPAND_ALL_BUDGET, `${drawn} boxes`);
  });
});
