-- What the user runs: the `:TorchMlir*` commands and the lens command `torchMlirLens.showIr`
-- (the client's own; the other lens commands, Verify and Export, go to the server).

local client = require('torch_mlir_lens.client')
local compat = require('torch_mlir_lens.compat')
local ir_view = require('torch_mlir_lens.ir_view')
local linking = require('torch_mlir_lens.linking')
local notify = require('torch_mlir_lens.notify')
local root = require('torch_mlir_lens.root')
local trust = require('torch_mlir_lens.trust')

local M = {}

-- The source buffer a command is about: the current one, or an IR split's source.
local function source_buffer()
  local buf = vim.api.nvim_get_current_buf()
  local view = ir_view.views[buf]
  if view then
    local source = vim.fn.bufnr(vim.uri_to_fname(view.uri))
    if source > 0 then
      return source
    end
  end
  return buf
end

-- The server of `buf`; `fn(entry, lsp_client)` runs once it is initialized.
local function with_server(buf, fn)
  local entry, lsp_client = client.for_buffer(buf)
  if not entry or not lsp_client then
    error('no Torch-MLIR Lens server for this buffer: open a Python file of the project first', 0)
  end
  client.when_ready(entry, function(ready)
    fn(entry, ready)
  end)
end

--- `:TorchMlirShow [target]`: the IR of the module at the cursor, in a split.
---@param word string|nil a target (linalg, tosa, ...) or a pipeline name
function M.show(word)
  local buf = vim.api.nvim_get_current_buf()
  if ir_view.views[buf] then
    error('the cursor is in an IR split: run it in the Python file', 0)
  end
  local cursor = vim.api.nvim_win_get_cursor(0)
  local target, pipeline = ir_view.parse_target(word)
  with_server(buf, function(_, lsp_client)
    ir_view.open({
      client_id = lsp_client.id,
      uri = vim.uri_from_bufnr(buf),
      position = { line = cursor[1] - 1, character = cursor[2] },
      target = target,
      pipeline = pipeline,
    }, linking.redraw)
  end)
end

--- The lens command: arguments [uri, module, target].
local function show_ir_lens(command, ctx)
  local args = command.arguments or {}
  local uri, module, target = args[1], args[2], args[3]
  if type(uri) ~= 'string' or type(module) ~= 'string' then
    error('the lens carried no module', 0)
  end
  ir_view.open({ client_id = ctx.client_id, uri = uri, module = module, target = target }, linking.redraw)
end

-- Trust is per project root, whether or not its server runs (it learns it when it starts).
local function set_trust(trusted)
  local buf = source_buffer()
  local entry = client.for_buffer(buf)
  local project = entry and entry.root or root.of_buffer(buf)
  if not project then
    error('this buffer has no file: open a Python file of the project first', 0)
  end
  trust.set(project, trusted)
  if trusted then
    notify.info('trusted ' .. project .. ': its modules are lowered now.')
  else
    notify.info('no longer trusting ' .. project .. ': none of its code runs (lenses only).')
  end
end

local function show_info(entry, lsp_client)
  compat.request(lsp_client, 'torchMlirLens/serverInfo', { waitForWorker = false }, notify.guarded('Server info', function(err, answer)
    if err then
      error(notify.describe(err), 0)
    end
    local engine = answer.engine
    local lines = {
      string.format('torch-mlir-lens %s, server pid %d, Python %s', answer.version, answer.pid, entry.python),
      'project: ' .. entry.root .. (answer.trusted and ' (trusted)' or ' (not trusted: no code runs)'),
      'status: ' .. answer.status.state .. (answer.status.detail and (' — ' .. answer.status.detail) or ''),
      'worker: ' .. ((engine and engine.workerPid) and string.format('pid %d, %s jobs run', engine.workerPid, tostring(engine.jobsRun or '?')) or 'none'),
      string.format('targets: default %s, lenses %s, diagnostics %s (%s)', answer.settings.defaultTarget,
        table.concat(answer.settings.lensTargets, ', '), table.concat(answer.settings.diagnosticTargets, ', '),
        answer.settings.diagnostics),
    }
    vim.notify(table.concat(lines, '\n'), vim.log.levels.INFO)
  end), 0)
end

local function info()
  with_server(source_buffer(), function(entry, lsp_client)
    show_info(entry, lsp_client)
  end)
end

local function complete_target(lead)
  local out = {}
  local settings = require('torch_mlir_lens.config').options.settings or {}
  local words = vim.list_extend(vim.deepcopy(ir_view.TARGETS), vim.tbl_keys(settings.pipelines or {}))
  for _, word in ipairs(words) do
    if word:sub(1, #lead) == lead then
      table.insert(out, word)
    end
  end
  return out
end

--- Defines the user commands and the client-side lens command (idempotent).
function M.register()
  local create = vim.api.nvim_create_user_command
  create('TorchMlirShow', notify.guarded('TorchMlirShow', function(opts)
    M.show(opts.args ~= '' and opts.args or nil)
  end), { nargs = '?', complete = complete_target, desc = 'Show the IR of the module at the cursor in a split' })
  create('TorchMlirTrust', notify.guarded('TorchMlirTrust', function()
    set_trust(true)
  end), { desc = "Trust this project: let Torch-MLIR Lens run its code to lower modules" })
  create('TorchMlirUntrust', notify.guarded('TorchMlirUntrust', function()
    set_trust(false)
  end), { desc = 'Withdraw trust from this project (remembered)' })
  create('TorchMlirInfo', notify.guarded('TorchMlirInfo', info), { desc = 'Torch-MLIR Lens server info' })
  create('TorchMlirRestart', notify.guarded('TorchMlirRestart', function()
    client.stop_all()
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) then
        client.ensure(buf)
      end
    end
  end), { desc = 'Restart the Torch-MLIR Lens servers' })
  vim.lsp.commands['torchMlirLens.showIr'] = notify.guarded('Showing the IR', show_ir_lens)
end

return M
