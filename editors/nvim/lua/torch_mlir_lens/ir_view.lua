-- The IR of a module in a split (`:TorchMlirShow [target]`, the "Show … IR" lenses): a
-- scratch buffer of filetype `mlir` per (file, module, target), filled from the server's
-- `torchMlirLens/lower` answer and lowered again when its file is written.

local compat = require('torch_mlir_lens.compat')
local config = require('torch_mlir_lens.config')
local line_map = require('torch_mlir_lens.line_map')
local notify = require('torch_mlir_lens.notify')
local root = require('torch_mlir_lens.root')
local trust = require('torch_mlir_lens.trust')

local M = {}

M.views = {} -- IR bufnr → view {buf, client_id, uri, module, target, pipeline, map}

local CONTENT_MODIFIED = -32801

-- The targets the server knows (rules/targets.py); any other word names a pipeline of the
-- `pipelines` setting (or is a pipeline string itself).
M.TARGETS = { 'linalg', 'tosa', 'stablehlo', 'torch', 'raw', 'fx', 'llvm' }

local function is_target(word)
  return vim.tbl_contains(M.TARGETS, word)
end

local function label(view)
  return view.pipeline or view.target or 'default target'
end

--- The split's text and the lines above the IR (the VS Code panes' paneText): the IR when
--- there is one (partial IR included); else the failure, each diagnostic a comment line.
---@return string[] lines, integer ir_offset
local function text_of(view, answer)
  local ir = answer.ir or ''
  local ir_lines = ir ~= '' and vim.split(ir:gsub('\n$', ''), '\n', { plain = true }) or {}
  if (answer.ok or answer.partial) and #ir_lines > 0 then
    return ir_lines, 0
  end
  local lines = { string.format('// Torch-MLIR Lens: lowering %s to %s failed.', view.module or '?', label(view)) }
  for _, d in ipairs(answer.diagnostics or {}) do
    local where = (d.line and d.line ~= vim.NIL) and string.format(' (line %d)', d.line) or ''
    local op = (d.op and d.op ~= vim.NIL) and string.format(' [%s]', d.op) or ''
    for i, text in ipairs(vim.split(d.message or '', '\n', { plain = true })) do
      table.insert(lines, i == 1 and string.format('// %s%s%s: %s', d.severity or 'error', op, where, text) or ('//   ' .. text))
    end
  end
  if #ir_lines == 0 then
    return lines, 0
  end
  local offset = #lines + 1
  table.insert(lines, '')
  vim.list_extend(lines, ir_lines)
  return lines, offset
end

local function view_for(uri, module, target, pipeline)
  for _, view in pairs(M.views) do
    if view.uri == uri and view.module == module and view.target == target and view.pipeline == pipeline then
      return view
    end
  end
  return nil
end

local function new_buffer(view)
  local buf = vim.api.nvim_create_buf(false, true)
  local path = vim.uri_to_fname(view.uri)
  local name = string.format('torch-mlir-lens://%s/%s.%s.mlir', vim.fn.fnamemodify(path, ':~:.'), view.module, label(view))
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'mlir'
  return buf
end

local function window_of(buf)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  return nil
end

-- Shows the buffer beside the current window, leaving the cursor where it was.
local function show(buf)
  if window_of(buf) then
    return
  end
  local here = vim.api.nvim_get_current_win()
  vim.cmd(config.options.split == 'split' and 'belowright split' or 'belowright vsplit')
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.wo[win].wrap = false
  vim.wo[win].spell = false
  vim.api.nvim_set_current_win(here)
end

local function fill(view, answer)
  local lines, offset = text_of(view, answer)
  view.map = line_map.new(answer.map, offset, answer.frames)
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  vim.bo[view.buf].modified = false
end

local function client_of(view)
  local client = vim.lsp.get_client_by_id(view.client_id)
  if compat.is_stopped(client) then
    error('the server of this file is not running (it restarts when you open the file again)', 0)
  end
  return client
end

--- Asks the server for the IR of `request` ({client_id, uri, module?, position?, target?,
--- pipeline?}) and shows it in its split; `on_shown(view)` afterwards.
---@param request table
---@param on_shown function|nil
function M.open(request, on_shown)
  local client = client_of(request)
  local params = {
    uri = request.uri,
    module = request.module,
    position = request.position,
    target = request.target,
    pipeline = request.pipeline,
  }
  local ok = compat.request(client, 'torchMlirLens/lower', params, notify.guarded('Showing the IR', function(err, answer)
    if err then
      if err.code == CONTENT_MODIFIED then
        return -- a newer text superseded it; the next save shows the IR again
      end
      notify.error('lowering failed: ' .. notify.describe(err))
      return
    end
    if not answer.ok and not answer.partial and answer.error and answer.error.kind == 'untrusted' then
      trust.refused(root.of_path(vim.uri_to_fname(request.uri)))
      return
    end
    local target = nil -- a pipeline's view is keyed by the pipeline alone
    if request.pipeline == nil then
      target = (answer.target and answer.target ~= '') and answer.target or request.target
    end
    local view = view_for(request.uri, answer.module, target, request.pipeline)
    if not view then
      view = {
        client_id = request.client_id,
        uri = request.uri,
        module = answer.module,
        target = target,
        pipeline = request.pipeline,
      }
      view.buf = new_buffer(view)
      M.views[view.buf] = view
    end
    view.client_id = request.client_id
    fill(view, answer)
    if request.show ~= false then
      show(view.buf)
    end
    if not answer.ok and not answer.partial then
      notify.warn(string.format('%s did not lower to %s: the split lists why.', answer.module, label(view)))
    end
    vim.api.nvim_exec_autocmds('User', { pattern = 'TorchMlirLensIr', modeline = false })
    if on_shown then
      on_shown(view)
    end
  end))
  if not ok then
    error('the server of this file is not running', 0)
  end
end

--- The views of one source file.
---@param uri string
---@return table[]
function M.of_source(uri)
  local out = {}
  for _, view in pairs(M.views) do
    if view.uri == uri then
      table.insert(out, view)
    end
  end
  return out
end

--- Lowers again the views of a file that was written (their buffers update in place).
---@param uri string
---@param on_shown function|nil
function M.reload(uri, on_shown)
  for _, view in ipairs(M.of_source(uri)) do
    if vim.api.nvim_buf_is_valid(view.buf) then
      M.open({
        client_id = view.client_id,
        uri = view.uri,
        module = view.module,
        target = view.target,
        pipeline = view.pipeline,
        show = false,
      }, on_shown)
    end
  end
end

--- Forgets a view whose buffer went away.
function M.forget(buf)
  M.views[buf] = nil
end

--- Splits `:TorchMlirShow`'s argument into target / pipeline.
---@param word string|nil
---@return string|nil target, string|nil pipeline
function M.parse_target(word)
  if word == nil or word == '' then
    return nil, nil
  end
  if is_target(word) then
    return word, nil
  end
  return nil, word
end

return M
