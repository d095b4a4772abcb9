// The ONNX model view's stylesheet, adopted through the CSSOM (the webview's Content-Security-
// Policy allows no inline style): VS Code's theme variables.

export const STYLES = `
:root { color-scheme: light dark; }
body { margin: 0; font: 13px var(--vscode-font-family, system-ui, sans-serif); color: var(--vscode-foreground);
  background: var(--vscode-editor-background); }
header { position: sticky; top: 0; z-index: 1; background: var(--vscode-editor-background);
  padding: 8px 12px; border-bottom: 1px solid var(--vscode-panel-border, #8884); display: flex; flex-direction: column; gap: 6px; }
header h1 { font-size: 15px; margin: 0; }
.bar { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.meta { opacity: .8; }
input, select, button { font: inherit; color: var(--vscode-input-foreground, inherit); background: var(--vscode-input-background);
  border: 1px solid var(--vscode-input-border, #8886); border-radius: 3px; padding: 2px 6px; }
button { cursor: pointer; background: var(--vscode-button-secondaryBackground, #8882); color: var(--vscode-button-secondaryForeground, inherit); }
button:hover { background: var(--vscode-button-secondaryHoverBackground, #8884); }
.chip { padding: 1px 6px; border-radius: 9px; border: 1px solid #8886; }
.chip.ok { border-color: #3fb950; } .chip.bad { border-color: #f85149; }
main { padding: 0 12px 24px; }
h2 { font-size: 13px; margin: 14px 0 4px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 2px 8px; vertical-align: top; }
th { font-weight: 600; opacity: .8; }
td.types { font-family: var(--vscode-editor-font-family, monospace); font-size: 12px; }
tr.node { cursor: pointer; }
tr.node:hover { background: var(--vscode-list-hoverBackground, #8882); }
tr.node.selected { background: var(--vscode-list-activeSelectionBackground, #0060c040); }
tr.node.lit { outline: 1px solid var(--vscode-editor-rangeHighlightBorder, #ffca28); background: var(--vscode-editor-rangeHighlightBackground, #ffca2833); }
.badge { display: inline-block; min-width: 1.2em; text-align: center; margin-right: 4px; font-weight: 600; }
.badge.ok { color: #3fb950; } .badge.rejected { color: #f85149; } .badge.knock-on { color: #d29922; } .badge.unknown { opacity: .7; }
details { margin: 4px 0; } summary { cursor: pointer; padding: 2px 0; }
summary .problems { color: #f85149; margin-left: 6px; }
.why { font-size: 12px; opacity: .85; }
#status:empty { display: none; }
#status { padding: 6px 12px; }
#status.error { color: var(--vscode-errorForeground, #f85149); white-space: pre-wrap; }
`;
