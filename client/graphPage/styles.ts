// The view's stylesheet, adopted through the CSSOM (a constructed sheet): the pages' and the
// webview's Content-Security-Policy allow no inline style. VS Code's theme variables when in
// the editor, plain colours elsewhere.

export const STYLES = `
:root { color-scheme: light dark; }
body { margin: 0; font: 13px system-ui, sans-serif; color: var(--vscode-foreground, #222);
  background: var(--vscode-editor-background, #fafafa); height: 100vh; display: flex; flex-direction: column; overflow: hidden; }
header { display: flex; gap: 10px; align-items: center; padding: 6px 10px; flex-wrap: wrap;
  border-bottom: 1px solid var(--vscode-panel-border, #ccc); }
header h1 { font-size: 14px; margin: 0 8px 0 0; }
header input, header select, header button { font: inherit; color: inherit; background: var(--vscode-input-background, #fff);
  border: 1px solid var(--vscode-input-border, #bbb); border-radius: 3px; padding: 2px 6px; }
header button { cursor: pointer; }
.legend { display: flex; gap: 8px; align-items: center; }
.chip { display: inline-flex; align-items: center; gap: 4px; }
.dot { width: 10px; height: 10px; border-radius: 50%; display: inline-block; }
.verdict { font-weight: 600; }
main { flex: 1; display: flex; min-height: 0; }
#canvas { flex: 1; min-width: 0; cursor: grab; }
#canvas.dragging { cursor: grabbing; }
aside { width: 340px; overflow: auto; padding: 8px 12px; border-left: 1px solid var(--vscode-panel-border, #ccc); }
aside:empty { display: none; }
@media (max-width: 760px) {
  main { flex-direction: column; }
  aside { width: auto; max-height: 40%; border-left: 0; border-top: 1px solid var(--vscode-panel-border, #ccc); }
}
aside h2 { font-size: 14px; margin: 4px 0; word-break: break-all; }
aside dl { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: 2px 8px; }
aside dt { opacity: .7; }
aside dd { margin: 0; word-break: break-word; }
aside pre { font: 12px var(--vscode-editor-font-family, monospace); white-space: pre-wrap; word-break: break-all;
  background: var(--vscode-textCodeBlock-background, #eee); padding: 4px; }
aside a { color: var(--vscode-textLink-foreground, #0b62c4); cursor: pointer; }
.frame rect { fill: var(--vscode-editor-background, #fff); fill-opacity: .35; stroke: #8a8a8a; stroke-dasharray: 4 3; }
.frame { cursor: pointer; }
.frame-label { font-size: 12px; fill: var(--vscode-foreground, #333); }
.edge { fill: none; stroke: #8a8a8a; stroke-width: 1.2; }
.edge.stub { stroke-dasharray: 3 2; }
.item { cursor: pointer; }
.item .box { stroke: #0000; stroke-width: 3; }
.item.group .box { fill-opacity: .8; }
.item text { fill: #fff; pointer-events: none; }
.label { font-size: 12px; font-weight: 600; }
.sub, .badge { font-size: 11px; }
.item.selected .box { stroke: #ffca28; }
.item.lit .box { stroke: #00e5ff; }
.item.match .box { stroke: #e040fb; stroke-dasharray: 3 2; }
.item.verify:not(.selected):not(.lit) .box { stroke: #ff1744; stroke-dasharray: 6 2; }
.verify-verdict { font-weight: 600; }
#status { opacity: .8; }
`;
