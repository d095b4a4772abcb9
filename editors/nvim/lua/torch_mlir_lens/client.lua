-- One language client per project root: `python -m torch_mlir_lens serve`, started for the
-- first Python buffer of a root and attached to the others. Trust goes out in
-- `initializationOptions.trusted` (and `torchMlirLens/setTrusted` when it changes), settings
-- in `initializationOptions.settings` and `workspace/didChangeConfiguration` (Neovim 0.7
-- cannot answer `workspace/configuration`; later versions answer it from `settings`).

local compat = require('torch_mlir_lens.compat')
local config = require('torch_mlir_lens.config')
local interpreter = require('torch_mlir_lens.interpreter')
local lenses = require('torch_mlir_lens.lenses')
local notify = require('torch_mlir_lens.notify')
local root_of = require('torch_mlir_lens.root')
local trust = require('torch_mlir_lens.trust')

local M = {}

local NAME = 'torch-mlir-lens'

local by_root = {} -- root → entry {id, root, python, buffers = {bufnr → true}, status}
local by_id = {} -- client id → entry
local reported = {} -- problem text → true: said once per session

local function say_once(level, text)
  if not reported[text] then
    reported[text] = true
    notify[level](text)
  end
end

--- The live client of an entry, or nil.
local function live(entry)
  if not entry then
    return nil
  end
  local client = vim.lsp.get_client_by_id(entry.id)
  if compat.is_stopped(client) then
    return nil
  end
  return client
end

--- The entry and client serving `bufnr` (an IR split counts as its source's), or nil.
---@param bufnr integer
---@return table|nil entry, table|nil client
function M.for_buffer(bufnr)
  for _, entry in pairs(by_id) do
    if entry.buffers[bufnr] and not entry.stopping then
      return entry, live(entry)
    end
  end
  local root = root_of.of_buffer(bufnr)
  local entry = root and by_root[root]
  return entry, live(entry)
end

--- Every entry (project root) with a live client.
function M.entries()
  local out = {}
  for _, entry in pairs(by_root) do
    if live(entry) then
      table.insert(out, entry)
    end
  end
  return out
end

-- After the client is initialized: ask whether to trust the project when the buffer holds a
-- module (`torchMlirLens/modules` is static: it runs no code), then show its lenses.
local function buffer_ready(entry, client, bufnr)
  lenses.refresh(client, bufnr)
  if not config.options.ask_trust or trust.get(entry.root) ~= nil then
    return
  end
  local params = { uri = vim.uri_from_bufnr(bufnr) }
  compat.request(client, 'torchMlirLens/modules', params, function(err, answer)
    if not err and answer and type(answer.modules) == 'table' and #answer.modules > 0 then
      trust.ask(entry.root)
    end
  end, bufnr)
end

local function refresh_all(entry, client)
  for bufnr in pairs(entry.buffers) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      lenses.refresh_soon(client, bufnr)
    else
      entry.buffers[bufnr] = nil
    end
  end
end

local function loaded_buffer(uri)
  local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
  if bufnr > 0 and vim.api.nvim_buf_is_loaded(bufnr) then
    return bufnr
  end
  return nil
end

local function handlers()
  return {
    -- The server's state: lenses change when a check or verification ends (0.7–0.11 cannot
    -- be told to refresh them).
    ['torchMlirLens/status'] = function(_, params, ctx)
      local entry = by_id[ctx.client_id]
      if not entry or type(params) ~= 'table' then
        return
      end
      entry.status = params
      if params.state ~= 'lowering' and params.state ~= 'starting' then
        local client = live(entry)
        if client then
          refresh_all(entry, client)
        end
      end
      vim.api.nvim_exec_autocmds('User', { pattern = 'TorchMlirLensStatus', modeline = false })
    end,
    -- A check finished: its verdict lens is new.
    ['textDocument/publishDiagnostics'] = function(err, result, ctx, handler_config)
      vim.lsp.handlers['textDocument/publishDiagnostics'](err, result, ctx, handler_config)
      local entry = by_id[ctx.client_id]
      local client = live(entry)
      local bufnr = result and result.uri and loaded_buffer(result.uri)
      if client and bufnr then
        lenses.refresh_soon(client, bufnr)
      end
    end,
    -- The server's "not trusted" notice names the editor-neutral ways; here it is a command.
    ['window/showMessage'] = function(err, result, ctx, handler_config)
      if type(result) == 'table' and type(result.message) == 'string' and result.message:find('not trusted', 1, true) then
        result.message = result.message .. ' In Neovim: `:TorchMlirTrust`.'
      end
      return vim.lsp.handlers['window/showMessage'](err, result, ctx, handler_config)
    end,
  }
end

local function start(bufnr, root)
  local python, source = interpreter.choose(root)
  local check = interpreter.check(python, source)
  if not check.can_start then
    say_once('error', check.problem)
    return nil
  end
  if not check.ok then
    say_once('warn', check.problem)
  end
  local entry = { root = root, python = python, buffers = { [bufnr] = true }, status = nil, waiting = {} }
  local settings = config.settings()
  local client_config = {
    name = NAME,
    -- `-P` and a neutral working directory: nothing of the project is importable by the
    -- server or its worker before the project is trusted (a project's own json.py would run).
    cmd = { python, '-P', '-m', 'torch_mlir_lens', 'serve' },
    cmd_cwd = vim.loop.os_tmpdir(),
    cmd_env = config.options.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    -- Trust is per folder on the server: this client trusts its project root only.
    init_options = { trusted = trust.get(root) == true, trustedFolders = { vim.uri_from_fname(root) }, settings = settings },
    settings = config.section(), -- what Neovim ≥ 0.8 answers `workspace/configuration` with
    handlers = handlers(),
    on_init = function(client)
      vim.schedule(notify.guarded('Starting the server', function()
        -- After the didOpen of the buffers attached so far (0.7 sends them after on_init).
        compat.notify(client, 'workspace/didChangeConfiguration', { settings = config.section() })
        for b in pairs(entry.buffers) do
          if vim.api.nvim_buf_is_valid(b) then
            buffer_ready(entry, client, b)
          end
        end
        local waiting = entry.waiting
        entry.waiting = {}
        for _, fn in ipairs(waiting) do
          notify.guard('Running a command', fn, client)
        end
      end))
    end,
    on_exit = function(code, signal, id)
      vim.schedule(function()
        local gone = by_id[id]
        by_id[id] = nil
        if gone and by_root[gone.root] == gone then
          by_root[gone.root] = nil
        end
        if code ~= 0 and not (gone and gone.stopping) then
          notify.error(string.format(
            'the server for %s exited (code %s, signal %s); its output is in %s. '
              .. 'It starts again when you open a Python file of the project.',
            root, tostring(code), tostring(signal), vim.lsp.get_log_path()))
        end
      end)
    end,
  }
  local id = compat.start_client(client_config, bufnr)
  if not id then
    notify.error('could not start `' .. table.concat(client_config.cmd, ' ') .. '`.')
    return nil
  end
  entry.id = id
  by_root[root] = entry
  by_id[id] = entry
  return entry
end

--- Starts or attaches the server for a buffer of one of the configured file types.
---@param bufnr integer
function M.ensure(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return
  end
  if not vim.tbl_contains(config.options.filetypes, vim.bo[bufnr].filetype) then
    return
  end
  local root = root_of.of_buffer(bufnr)
  if not root then
    return
  end
  local entry = by_root[root]
  local client = live(entry)
  if not client then
    start(bufnr, root)
    return
  end
  if entry.buffers[bufnr] then
    return
  end
  entry.buffers[bufnr] = true
  vim.lsp.buf_attach_client(bufnr, entry.id)
  if client.initialized then
    vim.schedule(function()
      buffer_ready(entry, client, bufnr)
    end)
  end
end

--- Runs `fn(client)` once the server of `entry` is initialized (now, if it is).
---@param entry table
---@param fn function
function M.when_ready(entry, fn)
  local client = live(entry)
  if client and client.initialized then
    fn(client)
  else
    table.insert(entry.waiting, fn)
  end
end

--- Tells the running servers the new settings.
function M.push_settings()
  for _, entry in ipairs(M.entries()) do
    compat.notify(live(entry), 'workspace/didChangeConfiguration', { settings = config.section() })
  end
end

--- Tells the server of `root` (if running) whether it is trusted.
---@param root string
---@param trusted boolean
function M.tell_trust(root, trusted)
  local client = live(by_root[root])
  if client then
    compat.notify(client, 'torchMlirLens/setTrusted', { trusted = trusted, folders = { vim.uri_from_fname(root) } })
  end
end

--- Stops every server; the next `ensure` of a buffer starts a new one for its root.
function M.stop_all()
  for _, entry in pairs(by_id) do
    entry.stopping = true
    if by_root[entry.root] == entry then
      by_root[entry.root] = nil
    end
    local client = live(entry) -- its buffers are detached when it exits
    if client then
      if compat.has('0.11') then
        client:stop()
      else
        client.stop()
      end
    end
  end
end

return M
