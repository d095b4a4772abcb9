// The ONNX model view (VS Code's read-only custom editor of `.onnx` files): the graph's name,
// opsets, inputs and outputs, each backend on the whole model, and its nodes, searchable and
// grouped (by operator, by verdict, or in the file's order), each with the types of its values
// and a badge per backend (✓ lowered, ✗ rejected, ↯ failing only because of another node,
// ? unknown) whose tooltip says why. Buttons open each IR in an IR pane; a clicked node lights
// its IR lines there, and the cursor in a pane lights the node that made its line. Everything
// comes in messages from the editor (onnxEditor.ts); nothing is fetched.

import { type Grouping, type Model, type NodeRow, MARKS, group, isProblem, opsetText, operator, search, summaryText, title, valueText } from './model';
import { STYLES } from './styles';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare const acquireVsCodeApi: () => VsCodeApi;

type Incoming =
  | { type: 'model'; model: Model }
  | { type: 'loading'; text: string }
  | { type: 'error'; message: string }
  | { type: 'cursor'; nodes: number[] };

const host = acquireVsCodeApi();
const IR_TARGETS = ['torch', 'linalg', 'tosa', 'stablehlo'];

const state = {
  model: undefined as Model | undefined,
  grouping: 'op' as Grouping,
  query: '',
  problemsOnly: false,
  selected: 0,
  lit: new Set<number>(),
};

const sheet = new CSSStyleSheet();
sheet.replaceSync(STYLES);
document.adoptedStyleSheets = [sheet];

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const header = el('header');
const titleEl = el('h1');
const meta = el('div', { class: 'bar meta' });
const summary = el('div', { class: 'bar', 'aria-label': 'backends' });
const tools = el('div', { class: 'bar' });
const searchBox = el('input', { type: 'search', placeholder: 'Search node, operator or type (#12: node 12)', 'aria-label': 'Search nodes' });
const groupSelect = el('select', { 'aria-label': 'Group nodes' });
for (const [value, label] of [['op', 'Group by operator'], ['verdict', 'Group by verdict'], ['none', 'File order']]) {
  groupSelect.append(el('option', { value }, label));
}
const problemsBox = el('input', { type: 'checkbox', id: 'problems' });
const problemsLabel = el('label', { for: 'problems' }, 'Only nodes a backend does not take');
const irButtons = IR_TARGETS.map((t) => {
  const b = el('button', { 'data-target': t }, `${title(t)} IR`);
  b.addEventListener('click', () => host.postMessage({ type: 'showIr', target: t }));
  return b;
});
const graphButton = el('button', { title: 'The nodes as a graph, each coloured by its verdict' }, 'Graph');
graphButton.addEventListener('click', () => host.postMessage({ type: 'showGraph' }));
const refresh = el('button', { title: 'Read the model again' }, 'Refresh');
refresh.addEventListener('click', () => host.postMessage({ type: 'refresh' }));
tools.append(searchBox, groupSelect, problemsBox, problemsLabel, ...irButtons, graphButton, refresh);
header.append(titleEl, meta, summary, tools);
const status = el('div', { id: 'status', role: 'status' });
const main = el('main');
document.body.append(header, status, main);

function values(caption: string, items: Model['inputs']): HTMLElement {
  const section = el('section');
  section.append(el('h2', {}, `${caption} (${items.length})`));
  const table = el('table', { 'aria-label': caption });
  for (const v of items) {
    const tr = el('tr');
    tr.append(el('td', {}, v.name), el('td', { class: 'types' }, valueText(v)));
    table.append(tr);
  }
  section.append(table);
  return section;
}

function nodeRow(node: NodeRow): HTMLTableRowElement {
  const tr = el('tr', { class: 'node', 'data-index': String(node.index), tabindex: '0' });
  tr.classList.toggle('selected', node.index === state.selected);
  tr.classList.toggle('lit', state.lit.has(node.index));
  const types = `${node.inputs.join(', ') || '—'} → ${node.outputs.join(', ') || '—'}`;
  const verdicts = el('td', { class: 'verdicts' });
  for (const v of node.verdicts) {
    const mark = el('span', { class: `badge ${v.state}`, 'data-target': v.target, title: `${title(v.target)}: ${v.why ?? v.state}` }, MARKS[v.state]);
    verdicts.append(mark);
  }
  const why = node.verdicts.find((v) => v.state !== 'ok')?.why ?? '';
  tr.append(
    el('td', {}, `#${node.index}`),
    el('td', {}, node.name || '(unnamed)'),
    el('td', {}, `${operator(node)} · opset ${node.opset}`),
    el('td', { class: 'types' }, types),
    verdicts,
    el('td', { class: 'why' }, why),
  );
  tr.setAttribute('aria-label', `node ${node.index} ${node.name} ${operator(node)}: ${node.verdicts.map((v) => `${title(v.target)} ${v.state}`).join(', ')}`);
  const pick = () => {
    state.selected = node.index;
    for (const row of main.querySelectorAll('tr.node.selected')) row.classList.remove('selected');
    tr.classList.add('selected');
    host.postMessage({ type: 'select', node: node.index });
  };
  tr.addEventListener('click', pick);
  tr.addEventListener('keydown', (ev) => ev.key === 'Enter' && pick());
  return tr;
}

function head(targets: string[]): HTMLTableRowElement {
  const tr = el('tr');
  for (const h of ['#', 'Name', 'Operator', 'Types (in → out)', targets.map(title).join(' · '), 'Why']) tr.append(el('th', {}, h));
  return tr;
}

function render(): void {
  const model = state.model;
  main.replaceChildren();
  if (!model) return;
  titleEl.textContent = `${model.graph || '(unnamed graph)'} · ONNX model`;
  meta.textContent = `opsets ${opsetText(model.opsets)} · ${model.nodes.length} nodes${model.fixes.length ? ` · lowered through ${model.fixes.join(', ')}` : ''}`;
  summary.replaceChildren(...model.targets.map((s) => el('span', { class: `chip ${s.ok ? 'ok' : 'bad'}`, 'data-target': s.target, title: s.message ?? '' }, summaryText(s))));
  main.append(values('Inputs', model.inputs), values('Outputs', model.outputs));
  const shown = search(model.nodes, state.query).filter((n) => !state.problemsOnly || isProblem(n));
  main.append(el('h2', {}, `Nodes (${shown.length} of ${model.nodes.length})`));
  const targets = model.nodes[0]?.verdicts.map((v) => v.target) ?? [];
  for (const g of group(shown, state.grouping)) {
    const table = el('table', { 'aria-label': g.label });
    table.append(head(targets), ...g.nodes.map(nodeRow));
    if (state.grouping === 'none') {
      main.append(table);
      continue;
    }
    const details = el('details', { 'data-group': g.key });
    details.open = g.problems > 0 || shown.length <= 200;
    const sum = el('summary', {}, `${g.label} (${g.nodes.length})`);
    if (g.problems) sum.append(el('span', { class: 'problems' }, `${g.problems} not taken`));
    details.append(sum, table);
    main.append(details);
  }
}

/** Lights the rows of `nodes` (the cursor in an IR pane) and scrolls the first into view. */
function light(nodes: number[]): void {
  state.lit = new Set(nodes);
  for (const row of main.querySelectorAll<HTMLTableRowElement>('tr.node')) {
    row.classList.toggle('lit', state.lit.has(Number(row.dataset.index)));
  }
  const first = main.querySelector<HTMLTableRowElement>('tr.node.lit');
  if (first) {
    const details = first.closest('details');
    if (details) details.open = true;
    first.scrollIntoView({ block: 'nearest' });
  }
}

searchBox.addEventListener('input', () => {
  state.query = searchBox.value;
  render();
});
groupSelect.addEventListener('change', () => {
  state.grouping = groupSelect.value as Grouping;
  render();
});
problemsBox.addEventListener('change', () => {
  state.problemsOnly = problemsBox.checked;
  render();
});

window.addEventListener('message', (ev: MessageEvent<Incoming>) => {
  const msg = ev.data;
  if (msg.type === 'model') {
    state.model = msg.model;
    const error = msg.model.error;
    status.className = error ? 'error' : '';
    status.textContent = error ? `${error.message}` : '';
    render();
  } else if (msg.type === 'loading') {
    status.className = '';
    status.textContent = msg.text;
  } else if (msg.type === 'error') {
    status.className = 'error';
    status.textContent = msg.message;
  } else if (msg.type === 'cursor') {
    light(msg.nodes);
  }
});

host.postMessage({ type: 'ready' });
