-- Source ↔ IR linking, as the VS Code panes do it: the cursor's source line lights up the ops
-- it produced in every IR split of that file (scrolled into view), and the cursor on an op in a
-- split lights up the source line(s) that produced it. Highlights are extmarks of namespace
-- `torch_mlir_lens_linked` with the `TorchMlirLensLinkedIr` / `TorchMlirLensLinkedSource`
-- line highlight groups (default: linked to `Visual`).

local ir_view = require('torch_mlir_lens.ir_view')

local M = {}

M.ns = vim.api.nvim_create_namespace('torch_mlir_lens_linked')

--- Defines the highlight groups (again after a colour scheme change cleared them).
function M.define_highlights()
  vim.cmd('highlight default link TorchMlirLensLinkedIr Visual')
  vim.cmd('highlight default link TorchMlirLensLinkedSource Visual')
end

local function paint(buf, lines, group)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  local count = vim.api.nvim_buf_line_count(buf)
  for _, line in ipairs(lines) do
    if line < count then
      vim.api.nvim_buf_set_extmark(buf, M.ns, line, 0, { line_hl_group = group, priority = 150 })
    end
  end
end

-- Scrolls `win` so that 0-based `line` is visible (centred), when it is not already.
local function reveal(win, line)
  local info = vim.fn.getwininfo(win)[1]
  if not info or (line + 1 >= info.topline and line + 1 <= info.botline) then
    return
  end
  vim.api.nvim_win_call(win, function()
    vim.fn.winrestview({ topline = math.max(1, line + 1 - math.floor(info.height / 2)) })
  end)
end

local function windows_of(buf)
  local out = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      table.insert(out, win)
    end
  end
  return out
end

local function cursor_line()
  return vim.api.nvim_win_get_cursor(0)[1] - 1
end

--- Cursor in a source (or library) file: light up its ops in the splits that cover it.
---@param buf integer
---@param line integer|nil 0-based; the cursor's by default
function M.from_source(buf, line)
  local uri = vim.uri_from_bufnr(buf)
  line = line or cursor_line()
  local any = false
  for ir_buf, view in pairs(ir_view.views) do
    if view.map and vim.api.nvim_buf_is_valid(ir_buf) and (view.uri == uri or view.map:covers(uri)) then
      any = true
      local ir_lines = view.map:ir_lines_for(uri, line)
      paint(ir_buf, ir_lines, 'TorchMlirLensLinkedIr')
      if ir_lines[1] then
        for _, win in ipairs(windows_of(ir_buf)) do
          reveal(win, ir_lines[1])
        end
      end
    end
  end
  if any then -- a highlight drawn from a split's cursor is stale now
    vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  end
end

--- Cursor in an IR split: light up the source lines of that op (innermost frame first).
---@param ir_buf integer
---@param line integer|nil 0-based; the cursor's by default
function M.from_ir(ir_buf, line)
  local view = ir_view.views[ir_buf]
  if not view or not view.map then
    return
  end
  line = line or cursor_line()
  local by_uri = {}
  for _, frame in ipairs(view.map:chain_for(line)) do
    by_uri[frame.uri] = by_uri[frame.uri] or {}
    table.insert(by_uri[frame.uri], frame.line)
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and not ir_view.views[buf] then
      local uri = vim.uri_from_bufnr(buf)
      local lines = by_uri[uri]
      if lines or uri == view.uri or view.map:covers(uri) then
        paint(buf, lines or {}, 'TorchMlirLensLinkedSource')
        if lines then
          for _, win in ipairs(windows_of(buf)) do
            reveal(win, lines[1])
          end
        end
      end
    end
  end
  vim.api.nvim_buf_clear_namespace(ir_buf, M.ns, 0, -1) -- its own highlight came from the source
end

--- The cursor moved in `buf`: link from wherever it is.
function M.on_cursor(buf)
  if next(ir_view.views) == nil then
    return
  end
  if ir_view.views[buf] then
    M.from_ir(buf)
  else
    M.from_source(buf)
  end
end

--- A split was (re)filled: draw the highlight of its source's cursor.
---@param view table
function M.redraw(view)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.uri_from_bufnr(buf) == view.uri then
      M.from_source(buf, vim.api.nvim_win_get_cursor(win)[1] - 1)
      return
    end
  end
end

return M
